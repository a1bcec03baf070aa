#include "textflag.h"

// func MemoryPages() int32: memory.size, in 64 KiB pages.
TEXT ·MemoryPages(SB), NOSPLIT, $0-4
	Get SP
	CurrentMemory
	I32Store ret+0(FP)
	RET

// func GrowMemory(pages int32) int32: memory.grow; the old size or -1.
TEXT ·GrowMemory(SB), NOSPLIT, $0-12
	Get SP
	Get SP
	I32Load pages+0(FP)
	GrowMemory
	I32Store ret+8(FP)
	RET
