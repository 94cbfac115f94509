#include "textflag.h"

// func int80getpid() int32
//
// getpid (i386 number 20) through the 32-bit int $0x80 gate, from this
// 64-bit process: the kernel runs it with the i386 syscall table and
// AUDIT_ARCH_I386, the case a filter without an arch check misses.
TEXT ·int80getpid(SB), NOSPLIT, $0-4
	MOVL	$20, AX
	INT	$0x80
	MOVL	AX, ret+0(FP)
	RET
