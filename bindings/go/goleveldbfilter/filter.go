// Package goleveldbfilter makes leveldb-bloom's policies goleveldb filters
// (github.com/syndtr/goleveldb/leveldb/filter.Filter), so that a Go program keeps
// leveldb-bloom's filters in its goleveldb database with one line:
//
//	f, err := goleveldbfilter.NewCompact(10)
//	db, err := leveldb.OpenFile(path, &opt.Options{Filter: f})
//
// NewBloom's filters are byte for byte those of LevelDB 1.23 and of goleveldb's own
// filter.NewBloomFilter for the same keys; NewCompact's are leveldb-bloom's compact format,
// which stock readers (LevelDB, goleveldb's own Bloom filter) answer "may match". Both keep
// LevelDB's policy name, "leveldb.BuiltinBloomFilter2", and read each other's filters.
//
// A module of its own, beside the cgo binding (module leveldbbloom), so that the binding
// keeps no dependency. goleveldb hands a filter user keys (it strips the internal keys'
// tags) and reuses the buffers it passes to Add; a generator copies each key and builds the
// filter at Generate through the binding (one cgo call). A filter that cannot be built is
// the two bytes 00 00, which every reader answers "may match".
//
// Thread safety: goleveldb uses a Filter from many goroutines and a generator from one at a
// time, which is what the binding's Policy allows. Close the Filter after the database.
package goleveldbfilter

import (
	"github.com/syndtr/goleveldb/leveldb/filter"

	"leveldbbloom"
)

// matchAll is the filter stored when none can be built: its last byte, 0, makes every
// reader answer "may match".
var matchAll = []byte{0, 0}

// Filter is a leveldb-bloom policy as a goleveldb filter.
type Filter struct {
	policy *leveldbbloom.Policy
}

// NewBloom returns LevelDB's own Bloom filters at bitsPerKey (as filter.NewBloomFilter).
func NewBloom(bitsPerKey int) (*Filter, error) {
	p, err := leveldbbloom.NewPolicy(bitsPerKey)
	if err != nil {
		return nil, err
	}
	return &Filter{policy: p}, nil
}

// NewCompact returns leveldb-bloom's compact filters at bitsPerKey (0 to 32, fractions
// allowed): as long as Bloom filters, with fewer false positives.
func NewCompact(bitsPerKey float64) (*Filter, error) {
	p, err := leveldbbloom.NewCompactPolicy(bitsPerKey)
	if err != nil {
		return nil, err
	}
	return &Filter{policy: p}, nil
}

// Name is LevelDB's policy name, the same for both formats.
func (f *Filter) Name() string { return f.policy.Name() }

// Contains reports whether key may be in filter: false only when it certainly is not.
func (f *Filter) Contains(filter, key []byte) bool { return f.policy.MayMatch(key, filter) }

// NewGenerator returns a generator of this filter's filters.
func (f *Filter) NewGenerator() filter.FilterGenerator { return &generator{policy: f.policy} }

// Close frees the policy; the Filter must not be used after.
func (f *Filter) Close() error { return f.policy.Close() }

type generator struct {
	policy *leveldbbloom.Policy
	keys   [][]byte
}

func (g *generator) Add(key []byte) {
	g.keys = append(g.keys, append([]byte(nil), key...))
}

func (g *generator) Generate(b filter.Buffer) {
	built, err := g.policy.CreateFilter(g.keys)
	if err != nil {
		built = matchAll
	}
	b.Write(built)
	g.keys = g.keys[:0]
}
