// Package runtime is the memory side of the canonical ABI for wit-bindgen's Go bindings: the
// return areas of calls, and `cabi_realloc`, through which the host writes a call's arguments
// and an import's results (strings, lists) into the guest's memory.
package runtime

import (
	"runtime"
	"unsafe"
)

// Allocate returns size bytes aligned to align (at most 8), kept alive and in place until
// pinner unpins.
func Allocate(pinner *runtime.Pinner, size, align uintptr) unsafe.Pointer {
	if align > 8 {
		panic("alignment above 8")
	}
	if size == 0 {
		return unsafe.Pointer(align)
	}
	words := make([]uint64, (size+7)/8)
	pointer := unsafe.Pointer(unsafe.SliceData(words))
	pinner.Pin(pointer)
	return pointer
}

// `cabi_realloc` hands out memory from a slab allocated beforehand: it runs while the host is
// lowering a value into the guest, when the guest may not call out of the component, and
// Go's allocator may (it reads the clock when it takes a new span). A slab stays alive as
// long as a lifted string or list points into it (Go's collector does not move objects).
const slabSize = 64 << 10

// The free rest of the current slab.
var slab []byte

func init() { refill() }

// refill starts a new slab when less than half of the current one is left.
func refill() {
	if len(slab) < slabSize/2 {
		slab = make([]byte, slabSize)
	}
}

// Unpin is called by the bindings once an export's arguments are lifted into Go values: the
// slab is topped up there, outside any lowering, for the imports the call makes.
func Unpin() { refill() }

//go:wasmexport cabi_realloc
func cabiRealloc(old unsafe.Pointer, oldSize, align, newSize uint32) unsafe.Pointer {
	if newSize == 0 {
		return unsafe.Pointer(uintptr(align))
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(slab)))
	pad := uint32((uintptr(align) - base%uintptr(align)) % uintptr(align))
	var pointer unsafe.Pointer
	if uint64(pad)+uint64(newSize) <= uint64(len(slab)) {
		pointer = unsafe.Pointer(&slab[pad])
		slab = slab[pad+newSize:]
	} else {
		// Larger than a slab's rest: from Go's allocator, which works unless it needs a new
		// span from the system at this moment.
		pointer = unsafe.Pointer(unsafe.SliceData(make([]uint64, (newSize+7)/8)))
	}
	if oldSize > 0 {
		copy(unsafe.Slice((*byte)(pointer), newSize), unsafe.Slice((*byte)(old), min(oldSize, newSize)))
	}
	return pointer
}
