// An ordinary Go program on LevelDB's C API through cgo (as Go's LevelDB bindings over the
// C library are): it knows nothing of leveldb-bloom. Go ends a process with exit_group, never
// running C's atexit handlers, so the drop-in's statistics must be on disk before: when the
// program destroys its last policy (run_go.sh checks).
//
// Usage: leveldbprogram DB_DIR   (prints how many keys it found)
package main

/*
#cgo LDFLAGS: -lleveldb
#include <stdlib.h>
#include <string.h>
#include <leveldb/c.h>
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"
)

func check(err *C.char) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "leveldbprogram:", C.GoString(err))
		os.Exit(3)
	}
}

func main() {
	dir := C.CString(os.Args[1])
	defer C.free(unsafe.Pointer(dir))
	options := C.leveldb_options_create()
	policy := C.leveldb_filterpolicy_create_bloom(10)
	C.leveldb_options_set_filter_policy(options, policy)
	C.leveldb_options_set_create_if_missing(options, 1)
	var err *C.char
	db := C.leveldb_open(options, dir, &err)
	check(err)
	write := C.leveldb_writeoptions_create()
	value := C.CString("v")
	for i := 0; i < 20000; i++ {
		key := C.CString(fmt.Sprintf("key%08d", 2*i))
		C.leveldb_put(db, write, key, C.strlen(key), value, 1, &err)
		C.free(unsafe.Pointer(key))
		check(err)
	}
	C.leveldb_compact_range(db, nil, 0, nil, 0)
	read := C.leveldb_readoptions_create()
	present, absent := 0, 0
	for i := 0; i < 40000; i++ {
		key := C.CString(fmt.Sprintf("key%08d", i))
		var n C.size_t
		got := C.leveldb_get(db, read, key, C.strlen(key), &n, &err)
		C.free(unsafe.Pointer(key))
		check(err)
		if got != nil {
			present++
			C.leveldb_free(unsafe.Pointer(got))
		} else {
			absent++
		}
	}
	C.leveldb_close(db)
	C.leveldb_filterpolicy_destroy(policy)
	fmt.Printf("present=%d absent=%d\n", present, absent)
}
