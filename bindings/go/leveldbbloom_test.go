package leveldbbloom

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
)

// The vectors real LevelDB computed (cpp_tests/vectors_test.cc).
type vectorFile struct {
	Format     int    `json:"format"`
	Oracle     string `json:"oracle"`
	PolicyName string `json:"policy_name"`
	KeySets    []struct {
		Name   string   `json:"name"`
		Keys   []string `json:"keys"`
		Probes []string `json:"probes"`
	} `json:"key_sets"`
	Filters []struct {
		KeySet     string `json:"key_set"`
		BitsPerKey int    `json:"bits_per_key"`
		Filter     string `json:"filter"`
		Answers    []bool `json:"answers"`
	} `json:"filters"`
	Malformed []struct {
		Filter  string   `json:"filter"`
		Probes  []string `json:"probes"`
		Answers []bool   `json:"answers"`
	} `json:"malformed"`
}

func loadVectors(t *testing.T) *vectorFile {
	t.Helper()
	path := os.Getenv("LEVELDB_BLOOM_VECTORS_FILE")
	if path == "" {
		path = filepath.Join("..", "..", "tests", "vectors", "leveldb_filters.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the vectors: %v", err)
	}
	var v vectorFile
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &v
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func unhexAll(t *testing.T, ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = unhex(t, s)
	}
	return out
}

func mustPolicy(t *testing.T, bpk int) *Policy {
	t.Helper()
	p, err := NewPolicy(bpk)
	return keep(t, p, err, fmt.Sprintf("NewPolicy(%d)", bpk))
}

// queryCountingNoMatch asks `single` of filter f one key at a time and `batch` in one
// batch, and returns how many answers were "no match" (what the statistics must count).
func queryCountingNoMatch(p *Policy, f []byte, single, batch []string) uint64 {
	noMatch := uint64(0)
	for _, k := range single {
		if !p.MayMatch([]byte(k), f) {
			noMatch++
		}
	}
	keys := make([][]byte, len(batch))
	for i, k := range batch {
		keys[i] = []byte(k)
	}
	answers, _ := p.MayMatchBatch(keys, f)
	for _, m := range answers {
		if !m {
			noMatch++
		}
	}
	return noMatch
}

// expectAllFound fails the test unless every key of filter f may match, asked one at a
// time and in one batch (a false negative hides stored data).
func expectAllFound(t *testing.T, p *Policy, keys [][]byte, f []byte, what string) {
	t.Helper()
	batch, err := p.MayMatchBatch(keys, f)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if !p.MayMatch(k, f) || !batch[i] {
			t.Fatalf("false negative: %s, key %x", what, k)
		}
	}
}

// keep fails the test if a policy could not be made (`what` says how it was asked for),
// and closes it when the test ends.
func keep(t *testing.T, p *Policy, err error, what string) *Policy {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestVersion(t *testing.T) {
	if v := Version(); v != PackageVersion {
		t.Fatalf("library version %q, package written for %q", v, PackageVersion)
	}
}

func TestLevelDBVectors(t *testing.T) {
	v := loadVectors(t)
	if v.Format != 1 || v.PolicyName != "leveldb.BuiltinBloomFilter2" {
		t.Fatalf("unexpected vectors file: format %d, policy %q", v.Format, v.PolicyName)
	}
	if len(v.Filters) < 40 || len(v.Malformed) < 20 {
		t.Fatalf("vectors file too small: %d filters, %d malformed", len(v.Filters), len(v.Malformed))
	}
	type keySet struct{ keys, probes [][]byte }
	sets := map[string]keySet{}
	for _, s := range v.KeySets {
		sets[s.Name] = keySet{unhexAll(t, s.Keys), unhexAll(t, s.Probes)}
	}
	queries := 0
	for _, c := range v.Filters {
		c := c
		t.Run(fmt.Sprintf("%s/bpk%d", c.KeySet, c.BitsPerKey), func(t *testing.T) {
			s, ok := sets[c.KeySet]
			if !ok {
				t.Fatalf("unknown key set %q", c.KeySet)
			}
			p := mustPolicy(t, c.BitsPerKey)
			want := unhex(t, c.Filter)
			if p.Name() != v.PolicyName {
				t.Errorf("Name() = %q", p.Name())
			}
			if n, err := p.FilterLen(len(s.keys)); err != nil || n != len(want) {
				t.Errorf("FilterLen(%d) = %d, %v; LevelDB's filter has %d bytes", len(s.keys), n, err, len(want))
			}
			got, err := p.CreateFilter(s.keys)
			if err != nil {
				t.Fatalf("CreateFilter: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("CreateFilter differs from LevelDB:\n got  %x\n want %x", got, want)
			}
			checkAnswers(t, p, s.probes, want, c.Answers)
			queries += len(s.probes)
		})
	}
	for i, m := range v.Malformed {
		m := m
		t.Run(fmt.Sprintf("malformed/%d-%s", i, m.Filter), func(t *testing.T) {
			for _, bpk := range []int{0, 10, 100} {
				checkAnswers(t, mustPolicy(t, bpk), unhexAll(t, m.Probes), unhex(t, m.Filter), m.Answers)
			}
			queries += len(m.Probes)
		})
	}
	t.Logf("%d LevelDB filters and %d malformed filters, %d probe keys", len(v.Filters), len(v.Malformed), queries)
}

func checkAnswers(t *testing.T, p *Policy, probes [][]byte, filter []byte, want []bool) {
	t.Helper()
	if len(probes) != len(want) {
		t.Fatalf("%d probes, %d answers", len(probes), len(want))
	}
	for i, k := range probes {
		if got := p.MayMatch(k, filter); got != want[i] {
			t.Errorf("MayMatch(%x) = %v, LevelDB says %v", k, got, want[i])
		}
	}
	batch, err := p.MayMatchBatch(probes, filter)
	if err != nil {
		t.Fatalf("MayMatchBatch: %v", err)
	}
	if !reflect.DeepEqual(batch, want) {
		t.Errorf("MayMatchBatch differs from LevelDB's answers")
	}
}

func TestErrors(t *testing.T) {
	for _, bpk := range []int{-1, math.MinInt32, math.MinInt} {
		if p, err := NewPolicy(bpk); p != nil || !errors.Is(err, ErrNegativeBitsPerKey) {
			t.Errorf("NewPolicy(%d) = %v, %v; want ErrNegativeBitsPerKey", bpk, p, err)
		}
	}
	if p, err := NewPolicy(math.MaxInt32 + 1); p != nil || err == nil {
		t.Errorf("NewPolicy(MaxInt32+1) = %v, %v; want an error", p, err)
	}

	big := mustPolicy(t, math.MaxInt32)
	_, err := big.FilterLen(math.MaxInt)
	var e *Error
	if !errors.As(err, &e) || e.Status != ErrTooLarge || !errors.Is(err, &Error{Status: ErrTooLarge}) {
		t.Errorf("FilterLen(MaxInt) at MaxInt32 bits per key: %v; want ErrTooLarge", err)
	}
	if e != nil && e.Error() == "" {
		t.Errorf("empty error message")
	}
	if _, err := big.FilterLen(-1); !errors.Is(err, &Error{Status: ErrInvalidArgument}) {
		t.Errorf("FilterLen(-1): %v", err)
	}

	// Status messages come from the library.
	if ErrOffsetBackwards.String() == ErrAlreadyFinished.String() || OK.String() == "" {
		t.Errorf("status messages: %q %q %q", OK, ErrOffsetBackwards, ErrAlreadyFinished)
	}
	if Status(12345).String() != "unknown status" {
		t.Errorf("unknown status: %q", Status(12345))
	}

	// A closed policy.
	p, _ := NewPolicy(10)
	f, _ := p.CreateFilter([][]byte{[]byte("a")})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p.Close() // again: no-op
	if _, err := p.CreateFilter(nil); !errors.Is(err, ErrClosed) {
		t.Errorf("CreateFilter after Close: %v", err)
	}
	if _, err := p.MayMatchBatch([][]byte{[]byte("a")}, f); !errors.Is(err, ErrClosed) {
		t.Errorf("MayMatchBatch after Close: %v", err)
	}
	if _, err := p.Stats(); !errors.Is(err, ErrClosed) {
		t.Errorf("Stats after Close: %v", err)
	}
	if !p.MayMatch([]byte("zzz"), f) {
		t.Errorf("MayMatch on a closed policy must answer may-match")
	}
}

func TestNilAndEmptyKeys(t *testing.T) {
	p := mustPolicy(t, 10)
	f, err := p.CreateFilter([][]byte{nil, {}, []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if !p.MayMatch(nil, f) || !p.MayMatch([]byte{}, f) || !p.MayMatch([]byte("x"), f) {
		t.Errorf("empty or nil key not found")
	}
	empty, err := p.CreateFilter(nil)
	if err != nil || len(empty) != 9 {
		t.Fatalf("CreateFilter(nil) = %x, %v", empty, err)
	}
	if got, err := p.MayMatchBatch(nil, empty); err != nil || len(got) != 0 {
		t.Errorf("MayMatchBatch(nil) = %v, %v", got, err)
	}
	// Filters shorter than 2 bytes never match, as in LevelDB.
	if p.MayMatch([]byte("x"), nil) || p.MayMatch([]byte("x"), []byte{6}) {
		t.Errorf("a filter shorter than 2 bytes matched")
	}
}

func TestNoFalseNegativesAndBatchEqualsSingle(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	randomKeys := func(n int) [][]byte {
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = make([]byte, rng.Intn(41))
			rng.Read(keys[i])
		}
		return keys
	}
	for _, bpk := range []int{0, 1, 10, 16, 100} {
		p := mustPolicy(t, bpk)
		for _, n := range []int{1, 10, 100, 1000} {
			keys := randomKeys(n)
			f, err := p.CreateFilter(keys)
			if err != nil {
				t.Fatal(err)
			}
			expectAllFound(t, p, keys, f, fmt.Sprintf("bpk %d, %d keys", bpk, n))
			absent := randomKeys(300)
			batch, _ := p.MayMatchBatch(absent, f)
			for i, k := range absent {
				if p.MayMatch(k, f) != batch[i] {
					t.Fatalf("batch differs from single for %x", k)
				}
			}
		}
	}
}

func TestStats(t *testing.T) {
	ResetGlobalStats()
	uncounted := mustPolicy(t, 10)
	p, err := uncounted.Counted()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The uncounted policy keeps no statistics, and its work is in no count.
	if _, err := uncounted.CreateFilter([][]byte{[]byte("u")}); err != nil {
		t.Fatal(err)
	}
	if _, err := uncounted.Stats(); !errors.Is(err, &Error{Status: ErrNotCounted}) {
		t.Errorf("Stats of an uncounted policy: %v", err)
	}
	if err := uncounted.ResetStats(); !errors.Is(err, &Error{Status: ErrNotCounted}) {
		t.Errorf("ResetStats of an uncounted policy: %v", err)
	}
	uncounted.Close()
	if _, err := uncounted.Counted(); !errors.Is(err, ErrClosed) {
		t.Errorf("Counted after Close: %v", err)
	}
	f, _ := p.CreateFilter([][]byte{[]byte("a"), []byte("b"), []byte("b")})
	noMatch := queryCountingNoMatch(p, f, []string{"a", "b", "x", "y", "z"}, []string{"a", "q"})
	s, err := p.Stats()
	want := Stats{FiltersBuilt: 1, KeysAdded: 3, Queries: 7, NoMatch: noMatch}
	if err != nil || s != want {
		t.Fatalf("Stats() = %+v, %v; want %+v", s, err, want)
	}
	if g, err := GlobalStats(); err != nil || g != want {
		t.Errorf("GlobalStats() = %+v, %v; want %+v", g, err, want)
	}
	if err := p.ResetStats(); err != nil {
		t.Fatal(err)
	}
	if s, _ := p.Stats(); s != (Stats{}) {
		t.Errorf("after ResetStats: %+v", s)
	}
	p.Close()
	if g, _ := GlobalStats(); g != want {
		t.Errorf("a closed policy's counts must stay in the global ones: %+v", g)
	}
	ResetGlobalStats()
	if g, _ := GlobalStats(); g != (Stats{}) {
		t.Errorf("after ResetGlobalStats: %+v", g)
	}
}

func TestConcurrentUseAndClose(t *testing.T) {
	p, _ := NewPolicy(10)
	keys := [][]byte{[]byte("k1"), []byte("k2"), []byte("k3")}
	f, _ := p.CreateFilter(keys)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				if !p.MayMatch(keys[i%3], f) {
					t.Errorf("false negative")
					return
				}
				if _, err := p.MayMatchBatch(keys, f); err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Errorf("MayMatchBatch: %v", err)
					}
					return
				}
			}
		}()
	}
	p.Close()
	wg.Wait()
}

func ExampleNewPolicy() {
	p, err := NewPolicy(10)
	if err != nil {
		panic(err)
	}
	defer p.Close()
	filter, _ := p.CreateFilter([][]byte{[]byte("hello"), []byte("world")})
	fmt.Printf("%x\n", filter)
	fmt.Println(p.MayMatch([]byte("hello"), filter), p.MayMatch([]byte("x"), filter))
	// Output:
	// 114000414410401006
	// true false
}
