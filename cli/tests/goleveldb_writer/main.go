// A goleveldb writer that keeps its database open, as go-ethereum does: it writes records
// key%08d until its standard input closes, printing how many LevelDB has acknowledged, then
// closes the database and prints the final count. goleveldb locks LOCK with flock(2).
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

func main() {
	db, err := leveldb.OpenFile(os.Args[1], &opt.Options{
		Filter:      filter.NewBloomFilter(10),
		WriteBuffer: 64 << 10, // small: tables and compactions while the command runs
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	out := bufio.NewWriter(os.Stdout)
	acknowledged := 0
	value := make([]byte, 100)
	for running := true; running; {
		select {
		case <-stop:
			running = false
		default:
			key := fmt.Sprintf("key%08d", acknowledged)
			if err := db.Put([]byte(key), value, nil); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			acknowledged++
			if acknowledged == 2000 {
				fmt.Fprintln(out, "writing")
				out.Flush()
			}
		}
	}
	if err := db.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintln(out, "acknowledged", acknowledged)
	out.Flush()
}
