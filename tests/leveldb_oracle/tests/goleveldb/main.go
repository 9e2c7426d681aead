// goleveldb with leveldb-bloom's filters (bindings/go/goleveldbfilter), driven by
// tests/leveldb_oracle/tests/goleveldb.rs, which judges what it writes with LevelDB 1.23.
//
//	main bloom DIR     writes the test's records into DIR with NewBloom(10), after checking
//	                   that its filters are goleveldb's own filter.NewBloomFilter(10)'s for
//	                   the same keys; then reads every record back
//	main compact DIR   the same with NewCompact(10), without the identity check
//
// Prints "identical N" (filters compared) and "read N" (records read back as written).
package main

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"strings"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"leveldbbloom/goleveldbfilter"
)

const records = 20000

func key(i int) []byte { return []byte(fmt.Sprintf("user%010d", i)) }

func value(i int) []byte {
	if i%7 == 0 {
		return []byte("written again")
	}
	return []byte(fmt.Sprintf("value %d %s", i, strings.Repeat("x", i%40)))
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

// generate builds f's filter for keys, as goleveldb's table writer does.
func generate(f filter.Filter, keys [][]byte) []byte {
	g := f.NewGenerator()
	for _, k := range keys {
		g.Add(k)
	}
	var b util.Buffer
	g.Generate(&b)
	return b.Bytes()
}

// identical compares the filters of ours and goleveldb's own Bloom filter for random key
// sets (sizes 0 to 600, random bytes and the test's keys), each key passed in a buffer that
// is overwritten after Add, as goleveldb reuses its buffers.
func identical(ours filter.Filter) int {
	theirs := filter.NewBloomFilter(10)
	rng := rand.New(rand.NewSource(1))
	n := 0
	for round := 0; round < 300; round++ {
		var keys [][]byte
		for i := rng.Intn(600); i > 0; i-- {
			k := make([]byte, rng.Intn(40))
			rng.Read(k)
			if rng.Intn(2) == 0 {
				k = key(rng.Intn(records))
			}
			keys = append(keys, k)
		}
		a, b := generate(ours, keys), generate(theirs, keys)
		if !bytes.Equal(a, b) {
			fail("round %d, %d keys: leveldb-bloom's filter %x, goleveldb's %x", round, len(keys), a, b)
		}
		for _, k := range keys {
			if !ours.Contains(a, k) || !theirs.Contains(a, k) {
				fail("round %d: a key not matched", round)
			}
		}
		n++
	}
	return n
}

func main() {
	if len(os.Args) != 3 {
		fail("usage: main bloom|compact DIR")
	}
	var f *goleveldbfilter.Filter
	var err error
	switch os.Args[1] {
	case "bloom":
		f, err = goleveldbfilter.NewBloom(10)
	case "compact":
		f, err = goleveldbfilter.NewCompact(10)
	default:
		fail("unknown format %q", os.Args[1])
	}
	if err != nil {
		fail("%v", err)
	}
	defer f.Close()
	if os.Args[1] == "bloom" {
		fmt.Println("identical", identical(f))
	}
	options := &opt.Options{Filter: f, WriteBuffer: 64 << 10}
	db, err := leveldb.OpenFile(os.Args[2], options)
	if err != nil {
		fail("open: %v", err)
	}
	for i := 0; i < records; i++ {
		if err := db.Put(key(i), []byte(fmt.Sprintf("value %d %s", i, strings.Repeat("x", i%40))), nil); err != nil {
			fail("put: %v", err)
		}
	}
	for i := 0; i < records; i += 7 {
		if err := db.Put(key(i), value(i), nil); err != nil {
			fail("put: %v", err)
		}
	}
	if err := db.CompactRange(util.Range{}); err != nil {
		fail("compact: %v", err)
	}
	if err := db.Close(); err != nil {
		fail("close: %v", err)
	}
	db, err = leveldb.OpenFile(os.Args[2], options)
	if err != nil {
		fail("reopen: %v", err)
	}
	read := 0
	for i := 0; i < records; i++ {
		if v, err := db.Get(key(i), nil); err == nil && bytes.Equal(v, value(i)) {
			read++
		}
	}
	if err := db.Close(); err != nil {
		fail("close: %v", err)
	}
	fmt.Println("read", read)
}
