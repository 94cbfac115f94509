// The clones of Prespawn's early process and of the command the first
// process vforks: new processes on stacks of their own that share the
// caller's memory (CLONE_VM), so they need an entry point that does not
// return into the caller's frames. See early_linux_amd64.go.

#include "textflag.h"

#define SYS_clone 56
#define SYS_exit 60

// func rawClone(flags, stack, ctid, fn uintptr, arg unsafe.Pointer) (pid, errno uintptr)
TEXT ·rawClone(SB),NOSPLIT|NOFRAME,$0-56
	MOVQ	flags+0(FP), DI
	MOVQ	stack+8(FP), SI
	MOVQ	ctid+16(FP), R10 // child_tid
	MOVQ	fn+24(FP), R13 // callee-saved: survive the syscall into the child
	MOVQ	arg+32(FP), R12
	MOVQ	$0, DX // parent_tid
	MOVQ	$0, R8 // tls: the child keeps the caller's
	MOVQ	$SYS_clone, AX
	SYSCALL
	CMPQ	AX, $0
	JEQ	child
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	MOVQ	$0, pid+40(FP)
	NEGQ	AX
	MOVQ	AX, errno+48(FP)
	RET
ok:
	MOVQ	AX, pid+40(FP)
	MOVQ	$0, errno+48(FP)
	RET

child:
	// On the new stack (the kernel loaded SI into SP). Call fn(arg), fn
	// being a func value (earlyEntry, cmdEntry), with Go's internal
	// register ABI: first argument in AX, closure context in DX, X15
	// zero; R14 still holds the caller's g, which nosplit code leaves
	// alone. (CALL ·earlyMain(SB) would go through the ABI0 wrapper,
	// which under the race detector calls racefuncenter on the caller's
	// goroutine.) The 32 bytes are the callee's spill slots for its
	// register arguments, which live in its caller's frame. fn never
	// returns; exit if it does.
	ANDQ	$~15, SP
	SUBQ	$32, SP
	MOVQ	R12, AX
	MOVQ	R13, DX
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
