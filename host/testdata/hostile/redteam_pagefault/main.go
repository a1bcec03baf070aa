//go:build wasip1

// Command redteam_pagefault is a hostile guest that carries a bit from one
// op to the next through the reset strategy's page residue. A reset copies
// the template back into the pages an op wrote, but those pages stay
// private, present mappings: the next op on the same instance writes them
// without a copy-on-write fault, while a page nobody wrote still faults.
// The guest times the faults with nothing but the millisecond clock the
// host gives it (clock-edge counting gives sub-millisecond resolution).
//
// "rand" reports the guest's first math/rand value ("leak=r<n>").
//
// "send:<round>:<bit>" writes one byte in every page of region 2*round
// when bit is 1 (and nothing otherwise). "probe:<round>" times writing
// region 2*round and region 2*round+1 (a control region no op touched)
// and reports its verdict ("leak=one" or "leak=zero") with the timings.
// Findings go to stdout, which the tests read from the op's log (request
// binding leaves the guest no channel into the request).
package main

import (
	"math/rand/v2"
	"unsafe"

	"github.com/elevenmessenger/pinned/host/testdata/hostile/hpin"
)

//go:wasmimport wasi_snapshot_preview1 clock_time_get
func clockTimeGet(id uint32, precision uint64, result uint32) int32

const (
	regionPages = 512
	regions     = 16
	pageSize    = 4096
)

// area lives in the module's bss: in linear memory, inside the template
// image, untouched by the Go runtime.
var area [regions * regionPages * pageSize]byte

var sink byte

func main() {}

func now() uint64 {
	var t uint64
	clockTimeGet(1, 0, uint32(uintptr(unsafe.Pointer(&t))))
	return t
}

// edge waits for the millisecond clock to tick and returns the new time.
func edge() uint64 {
	t := now()
	for {
		if n := now(); n != t {
			return n
		}
	}
}

// spinsPerMs counts clock reads in one whole millisecond (the median of
// five, so a preemption does not skew it).
func spinsPerMs() int64 {
	var v [5]int64
	for i := range v {
		e := edge()
		n := int64(0)
		for now() == e {
			n++
		}
		v[i] = n
	}
	return median(v[:])
}

func median(v []int64) int64 {
	for i := 1; i < len(v); i++ { // insertion sort: tiny slices
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
	return v[len(v)/2]
}

// timeChunk returns the time in microseconds (estimated) to write one
// byte in each of pages [from, to) of region r.
func timeChunk(r, from, to int, perMs int64) int64 {
	base := r * regionPages * pageSize
	t0 := edge()
	for p := from; p < to; p++ {
		area[base+p*pageSize+64]++
	}
	t1 := now()
	n := int64(0)
	for now() == t1 {
		n++
	}
	us := int64(t1-t0) / 1000
	if perMs > 0 {
		us += 1000 * (perMs - n) / perMs
	}
	return us
}

const chunks = 16

// timeRegions times writing region a and region b in interleaved chunks
// and returns the median chunk time of each and the number of chunks in
// which b took at least minGap longer than a (faults a did not take): a
// preemption spoils a chunk or two, not the vote, and a constant error of
// the clock-edge estimate cancels out.
func timeRegions(a, b int, perMs int64) (int64, int64, int) {
	var ta, tb [chunks]int64
	step := regionPages / chunks
	votes := 0
	for c := 0; c < chunks; c++ {
		ta[c] = timeChunk(a, c*step, (c+1)*step, perMs)
		tb[c] = timeChunk(b, c*step, (c+1)*step, perMs)
		if tb[c]-ta[c] >= minGap {
			votes++
		}
	}
	return median(ta[:]), median(tb[:]), votes
}

// minGap is the least extra time, in microseconds, that counts as the
// copy-on-write faults of one chunk (32 pages; a fault costs microseconds).
const minGap = 60

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func split(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// request reports what the guest learned ("leak=<word>" on stdout, which
// the tests read from the op's log: request binding leaves a guest no
// channel into the request) and sends the honest request.
func request(word string) int32 {
	hpin.Print("leak=" + word + "\n")
	return hpin.Request(hpin.Honest())
}

//go:wasmexport run
func run() int32 {
	attack, _ := hpin.Attack()
	f := split(attack)
	switch {
	case len(f) == 3 && f[0] == "send":
		r, bit := atoi(f[1]), atoi(f[2])
		if r < 0 || 2*r+1 >= regions {
			return -1
		}
		if bit == 1 {
			base := 2 * r * regionPages * pageSize
			for p := 0; p < regionPages; p++ {
				area[base+p*pageSize+64]++
			}
		}
		return request("sent")
	case attack == "rand":
		// The Go runtime's random state lives in linear memory: a reset
		// instance starts every op from the template's.
		v := rand.Uint64()
		return request("r" + hpin.Itoa(int64(v>>1)))
	case len(f) == 2 && f[0] == "probe":
		r := atoi(f[1])
		if r < 0 || 2*r+1 >= regions {
			return -1
		}
		perMs := spinsPerMs()
		probe, ctrl, votes := timeRegions(2*r, 2*r+1, perMs)
		verdict := "zero"
		// "one": in most chunks the control region took the faults the
		// probed region did not.
		if 2*votes > chunks {
			verdict = "one"
		}
		hpin.Print("round=" + hpin.Itoa(int64(r)) + " probe_chunk_us=" + hpin.Itoa(probe) + " control_chunk_us=" + hpin.Itoa(ctrl) + " votes=" + hpin.Itoa(int64(votes)) + " spins_per_ms=" + hpin.Itoa(perMs) + " verdict=" + verdict + "\n")
		return request(verdict)
	}
	return -1
}
