// The clone of Prespawn's early process: a new process on its own stack
// that shares the caller's memory (CLONE_VM), so it needs an entry point
// that does not return into the caller's frames. See early_linux_amd64.go.

#include "textflag.h"

#define SYS_clone 56
#define SYS_exit 60

// func rawClone(flags, stack, ctid uintptr, arg unsafe.Pointer) (pid, errno uintptr)
TEXT ·rawClone(SB),NOSPLIT|NOFRAME,$0-48
	MOVQ	flags+0(FP), DI
	MOVQ	stack+8(FP), SI
	MOVQ	ctid+16(FP), R10 // child_tid
	MOVQ	arg+24(FP), R12 // callee-saved: survives the syscall into the child
	MOVQ	$0, DX // parent_tid
	MOVQ	$0, R8 // tls: the child keeps the caller's
	MOVQ	$SYS_clone, AX
	SYSCALL
	CMPQ	AX, $0
	JEQ	child
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	MOVQ	$0, pid+32(FP)
	NEGQ	AX
	MOVQ	AX, errno+40(FP)
	RET
ok:
	MOVQ	AX, pid+32(FP)
	MOVQ	$0, errno+40(FP)
	RET

child:
	// On the new stack (the kernel loaded SI into SP). Call earlyMain(arg)
	// through the func value earlyEntry, with Go's internal register ABI
	// (first argument in AX, X15 zero; R14 still holds the caller's g,
	// which nosplit code leaves alone): CALL ·earlyMain(SB) would go
	// through the ABI0 wrapper, which under the race detector calls
	// racefuncenter on the caller's goroutine. earlyMain never returns;
	// exit if it does.
	ANDQ	$~15, SP
	SUBQ	$32, SP // the callee spills its register arguments into its caller's frame
	MOVQ	R12, AX
	MOVQ	·earlyEntry(SB), DX
	MOVQ	0(DX), CX
	XORPS	X15, X15
	CALL	CX
exit:
	MOVQ	$111, DI
	MOVQ	$SYS_exit, AX
	SYSCALL
	JMP	exit

// The early process's atomics: sync/atomic's are instrumented under the
// race detector, whose state the early process must not touch (it shares
// the caller's memory).

// func earlyLoad(p *uint32) uint32
TEXT ·earlyLoad(SB),NOSPLIT,$0-12
	MOVQ	p+0(FP), AX
	MOVL	0(AX), AX
	MOVL	AX, ret+8(FP)
	RET

// func earlyStore(p *uint32, v uint32)
TEXT ·earlyStore(SB),NOSPLIT,$0-12
	MOVQ	p+0(FP), BX
	MOVL	v+8(FP), AX
	XCHGL	AX, 0(BX)
	RET
