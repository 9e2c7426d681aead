package leveldbbloom

// The opt-in compact format: NewCompactPolicy, NewPolicyForFPRate, Format. Compact filters
// are as long as LevelDB's Bloom filters at the same bits per key, have far fewer false
// positives, and end in the byte 31 (all zero when too few bits per key leave no room for a
// filter), which LevelDB's Bloom readers answer "may match". A compact policy answers every
// other filter, LevelDB's own Bloom filters included, exactly as LevelDB does.

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"testing"
)

// marker is the last byte of a compact filter.
const marker = 31

func mustCompact(t *testing.T, bpk float64) *Policy {
	t.Helper()
	p, err := NewCompactPolicy(bpk)
	return keep(t, p, err, fmt.Sprintf("NewCompactPolicy(%v)", bpk))
}

func mustForFPRate(t *testing.T, rate float64, format Format) *Policy {
	t.Helper()
	p, err := NewPolicyForFPRate(rate, format)
	return keep(t, p, err, fmt.Sprintf("NewPolicyForFPRate(%v, %v)", rate, format))
}

func randKeys(rng *rand.Rand, n, maxLen int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = make([]byte, rng.Intn(maxLen+1))
		rng.Read(keys[i])
	}
	return keys
}

func fixedKeys(rng *rand.Rand, n, size int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = make([]byte, size)
		rng.Read(keys[i])
	}
	return keys
}

// allZero is the filter a compact policy writes when no filter fits: its last byte
// (LevelDB's probe count) is 0, which LevelDB answers "may match" for every key.
func allZero(f []byte) bool {
	for _, b := range f {
		if b != 0 {
			return false
		}
	}
	return len(f) >= 2
}

func TestFormatConstants(t *testing.T) {
	if FormatBloom != 0 || FormatCompact != 1 {
		t.Fatalf("FormatBloom = %d, FormatCompact = %d", FormatBloom, FormatCompact)
	}
	if FormatBloom.String() != "bloom" || FormatCompact.String() != "compact" || Format(7).String() != "Format(7)" {
		t.Errorf("Format strings: %v %v %v", FormatBloom, FormatCompact, Format(7))
	}
}

func TestCompactPolicyProperties(t *testing.T) {
	for _, bpk := range []float64{0, 0.5, 3, 7.25, 10, 10.5, 32, math.Copysign(0, -1)} {
		p := mustCompact(t, bpk)
		if p.Format() != FormatCompact || p.BitsPerKey() != bpk || p.Name() != "leveldb.BuiltinBloomFilter2" {
			t.Errorf("NewCompactPolicy(%v): format %v, bits per key %v, name %q", bpk, p.Format(), p.BitsPerKey(), p.Name())
		}
		p.Close()
		if p.Format() != FormatCompact || p.BitsPerKey() != bpk {
			t.Errorf("after Close: format %v, bits per key %v", p.Format(), p.BitsPerKey())
		}
	}
	b := mustPolicy(t, 10)
	if b.Format() != FormatBloom || b.BitsPerKey() != 10 {
		t.Errorf("NewPolicy(10): format %v, bits per key %v", b.Format(), b.BitsPerKey())
	}
}

func TestCompactInvalidBitsPerKey(t *testing.T) {
	for _, bpk := range []float64{-1, -0.001, math.Inf(-1), math.Inf(1), math.NaN(), 32.000001, 33, math.MaxFloat64} {
		p, err := NewCompactPolicy(bpk)
		if p != nil || !errors.Is(err, ErrInvalidBitsPerKey) {
			t.Errorf("NewCompactPolicy(%v) = %v, %v; want ErrInvalidBitsPerKey", bpk, p, err)
		}
	}
}

func TestNewPolicyForFPRateCompact(t *testing.T) {
	for _, rate := range []float64{0.5, 0.1, 0.01, 0.001, 1e-6} {
		p := mustForFPRate(t, rate, FormatCompact)
		// In 64ths; above the information bound, log2(1/rate), which no filter beats, and
		// within a quarter of it plus the spare slots' and the trailer's share.
		bound := math.Log2(1 / rate)
		bits := p.BitsPerKey()
		if p.Format() != FormatCompact || bits*64 != math.Trunc(bits*64) || bits <= bound || bits > 1.25*bound+1.5 {
			t.Errorf("NewPolicyForFPRate(%v, compact): format %v, bits per key %v, bound %v", rate, p.Format(), bits, bound)
		}
	}
}

// bloomModel is the standard false-positive model at LevelDB's probe count.
func bloomModel(bpk int) float64 {
	k := int(float64(bpk) * 0.69)
	if k < 1 {
		k = 1
	}
	if k > 30 {
		k = 30
	}
	return math.Pow(1-math.Exp(-float64(k)/float64(bpk)), float64(k))
}

func TestNewPolicyForFPRateBloomIsLevelDBsPolicy(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	keys := randKeys(rng, 100, 40)
	for _, rate := range []float64{0.5, 0.1, 0.01, 0.001, 1e-6, 1e-12} {
		p := mustForFPRate(t, rate, FormatBloom)
		bpk := p.BitsPerKey()
		if p.Format() != FormatBloom || bpk != math.Trunc(bpk) || bpk < 1 || bpk > 100 {
			t.Fatalf("NewPolicyForFPRate(%v, bloom): format %v, bits per key %v", rate, p.Format(), bpk)
		}
		n := int(bpk)
		if bloomModel(n) > rate || (n > 1 && bloomModel(n-1) <= rate) {
			t.Errorf("rate %v: %d bits per key is not the least whose model reaches it", rate, n)
		}
		got, err := p.CreateFilter(keys)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := mustPolicy(t, n).CreateFilter(keys)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("rate %v: filters differ from NewPolicy(%d)'s", rate, n)
		}
	}
	for _, f := range []Format{FormatBloom, FormatCompact} {
		prev := 0.0
		for _, rate := range []float64{0.1, 0.01, 0.001} {
			if b := mustForFPRate(t, rate, f).BitsPerKey(); b <= prev {
				t.Errorf("%v: rate %v takes %v bits per key, no more than a larger rate", f, rate, b)
			} else {
				prev = b
			}
		}
	}
}

func TestNewPolicyForFPRateErrors(t *testing.T) {
	for _, f := range []Format{FormatBloom, FormatCompact} {
		// Outside (0, 1), and beyond reach: Bloom stops at 100 bits per key (about 2.5e-18),
		// compact at 32 (about 8e-10).
		for _, rate := range []float64{0, 1, -0.1, 1.5, math.NaN(), math.Inf(1), math.Inf(-1), 1e-20, 1e-300, 5e-324} {
			p, err := NewPolicyForFPRate(rate, f)
			var e *Error
			if p != nil || !errors.Is(err, ErrInvalidFPRate) || errors.As(err, &e) {
				t.Errorf("NewPolicyForFPRate(%v, %v) = %v, %v; want ErrInvalidFPRate", rate, f, p, err)
			}
		}
	}
	if _, err := NewPolicyForFPRate(6e-10, FormatCompact); !errors.Is(err, ErrInvalidFPRate) {
		t.Errorf("6e-10, compact: %v; want ErrInvalidFPRate", err)
	}
	mustForFPRate(t, 1e-8, FormatCompact)
	for _, f := range []Format{2, -1, 100} {
		if p, err := NewPolicyForFPRate(0.01, f); p != nil || !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("NewPolicyForFPRate(0.01, %v) = %v, %v; want ErrUnknownFormat", f, p, err)
		}
	}
}

func TestCompactNoFalseNegatives(t *testing.T) {
	for _, bpk := range []float64{0, 1, 2.5, 3, 4.5, 6, 8, 10, 12.75, 16, 24, 32} {
		rng := rand.New(rand.NewSource(int64(bpk * 100)))
		p := mustCompact(t, bpk)
		for _, n := range []int{0, 1, 2, 7, 64, 100, 500, 3000} {
			keys := randKeys(rng, n, 40)
			f, err := p.CreateFilter(keys)
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := p.FilterLen(n); len(f) != want {
				t.Errorf("bpk %v, %d keys: filter of %d bytes, FilterLen %d", bpk, n, len(f), want)
			}
			expectAllFound(t, p, keys, f, fmt.Sprintf("bpk %v, %d keys", bpk, n))
			absent := randKeys(rng, 200, 40)
			batch, _ := p.MayMatchBatch(absent, f)
			for i, k := range absent {
				if p.MayMatch(k, f) != batch[i] {
					t.Fatalf("batch differs from single for %x", k)
				}
			}
		}
	}
}

func TestCompactSameLengthAsBloom(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, bpk := range []int{0, 1, 2, 3, 4, 5, 7, 8, 10, 12, 16, 20, 25, 31, 32} {
		c, b := mustCompact(t, float64(bpk)), mustPolicy(t, bpk)
		for _, n := range []int{0, 1, 5, 6, 7, 10, 64, 100, 999, 4096} {
			cl, err1 := c.FilterLen(n)
			bl, err2 := b.FilterLen(n)
			if err1 != nil || err2 != nil || cl != bl {
				t.Fatalf("bpk %d, %d keys: FilterLen compact %d (%v), Bloom %d (%v)", bpk, n, cl, err1, bl, err2)
			}
			keys := randKeys(rng, n, 40)
			fc, _ := c.CreateFilter(keys)
			fb, _ := b.CreateFilter(keys)
			if len(fc) != bl || len(fb) != bl {
				t.Fatalf("bpk %d, %d keys: filters of %d and %d bytes, want %d", bpk, n, len(fc), len(fb), bl)
			}
		}
	}
	// Fractional bits per key: max(ceil(n * bpk), 64) bits, rounded up to bytes, plus one.
	for _, bpk := range []float64{0.5, 2.5, 7.3, 10.5, 13.9, 31.99} {
		p := mustCompact(t, bpk)
		for _, n := range []int{0, 1, 3, 10, 77, 1000} {
			bits := math.Max(math.Ceil(float64(n)*bpk), 64)
			want := (int(bits)+7)/8 + 1
			if got, err := p.FilterLen(n); err != nil || got != want {
				t.Errorf("bpk %v, %d keys: FilterLen %d, %v; want %d", bpk, n, got, err, want)
			}
		}
	}
}

func TestBloomAnswersCompactFiltersMayMatch(t *testing.T) {
	// What LevelDB itself did (the vectors file): every filter of 2 or more bytes whose last
	// byte (its probe count) is above 30, or 0, answers "may match" for every probe.
	v := loadVectors(t)
	seen := map[byte]bool{}
	for _, m := range v.Malformed {
		f := unhex(t, m.Filter)
		if len(f) >= 2 && (f[len(f)-1] > 30 || f[len(f)-1] == 0) {
			for _, a := range m.Answers {
				if !a {
					t.Fatalf("LevelDB answered no match on filter %s", m.Filter)
				}
			}
			seen[f[len(f)-1]] = true
		}
	}
	if !seen[0] || !seen[31] || !seen[255] {
		t.Fatalf("the vectors lack filters ending in 0, 31 or 255: %v", seen)
	}

	blooms := []*Policy{mustPolicy(t, 0), mustPolicy(t, 10), mustPolicy(t, 100)}
	for _, bpk := range []float64{0, 1, 2, 3, 5, 8, 10, 16, 32} {
		rng := rand.New(rand.NewSource(100 + int64(bpk)))
		c := mustCompact(t, bpk)
		for _, n := range []int{0, 1, 10, 100, 1000} {
			keys := randKeys(rng, n, 40)
			f, err := c.CreateFilter(keys)
			if err != nil {
				t.Fatal(err)
			}
			last := f[len(f)-1]
			if (last != marker && !allZero(f)) || (bpk >= 2 && last != marker) {
				t.Fatalf("bpk %v, %d keys: compact filter ends in %d: %x", bpk, n, last, f)
			}
			probes := append(keys, randKeys(rng, 200, 40)...)
			for _, b := range blooms {
				batch, _ := b.MayMatchBatch(probes, f)
				for i, k := range probes {
					if !b.MayMatch(k, f) || !batch[i] {
						t.Fatalf("Bloom policy (bpk %v) answered no match on a compact filter", b.BitsPerKey())
					}
				}
			}
		}
	}
}

func TestCompactFiltersDifferFromBloom(t *testing.T) {
	keys := randKeys(rand.New(rand.NewSource(3)), 100, 40)
	c, b := mustCompact(t, 10), mustPolicy(t, 10)
	fc, _ := c.CreateFilter(keys)
	fb, _ := b.CreateFilter(keys)
	if reflect.DeepEqual(fc, fb) {
		t.Fatalf("the compact policy built LevelDB's Bloom filter")
	}
	// The compact policy reads LevelDB's filter as LevelDB.
	if got, _ := c.MayMatchBatch(keys, fb); !reflect.DeepEqual(got, trues(len(keys))) {
		t.Errorf("false negative on a Bloom filter")
	}
}

func trues(n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = true
	}
	return out
}

func TestCompactPolicyAnswersLevelDBVectors(t *testing.T) {
	v := loadVectors(t)
	sets := map[string][][]byte{}
	for _, s := range v.KeySets {
		sets[s.Name] = unhexAll(t, s.Probes)
	}
	policies := []*Policy{mustCompact(t, 0), mustCompact(t, 10), mustCompact(t, 32)}
	for _, c := range v.Filters {
		c := c
		t.Run(fmt.Sprintf("%s/bpk%d", c.KeySet, c.BitsPerKey), func(t *testing.T) {
			f := unhex(t, c.Filter)
			if k := f[len(f)-1]; k < 1 || k > 30 {
				t.Fatalf("not a LevelDB Bloom filter: last byte %d", k)
			}
			for _, p := range policies {
				checkAnswers(t, p, sets[c.KeySet], f, c.Answers)
			}
		})
	}
	// Malformed filters too, except those a compact policy reads as compact (2 or more
	// bytes ending in 31), which LevelDB answers "may match" without looking.
	compared := 0
	for i, m := range v.Malformed {
		f := unhex(t, m.Filter)
		probes := unhexAll(t, m.Probes)
		p := policies[1]
		if len(f) < 2 || f[len(f)-1] != marker {
			checkAnswers(t, p, probes, f, m.Answers)
			compared++
			continue
		}
		batch, err := p.MayMatchBatch(probes, f)
		if err != nil {
			t.Fatal(err)
		}
		for j, k := range probes {
			if p.MayMatch(k, f) != batch[j] {
				t.Errorf("malformed %d: batch differs from single", i)
			}
		}
	}
	if compared < 30 {
		t.Errorf("only %d malformed filters compared", compared)
	}
}

func TestCompactFalsePositiveRateBelowBloom(t *testing.T) {
	// 10 bits per key, 100-key filters, the same absent keys for both: LevelDB's Bloom
	// filters give about 0.9%, compact ones far fewer (docs/benchmarks.md). 200 filters x
	// 1000 absent keys is ~1,800 Bloom false positives: 0.6x is many standard deviations
	// away from both.
	rng := rand.New(rand.NewSource(20240607))
	c, b := mustCompact(t, 10), mustPolicy(t, 10)
	bloomFP, compactFP, probes := 0, 0, 0
	for i := 0; i < 200; i++ {
		keys := fixedKeys(rng, 100, 16)
		absent := fixedKeys(rng, 1000, 17) // 17 bytes: never a key
		fb, _ := b.CreateFilter(keys)
		fc, _ := c.CreateFilter(keys)
		if len(fb) != 126 || len(fc) != 126 {
			t.Fatalf("filter lengths %d, %d; want 126", len(fb), len(fc))
		}
		ab, _ := b.MayMatchBatch(absent, fb)
		ac, _ := c.MayMatchBatch(absent, fc)
		for j := range absent {
			if ab[j] {
				bloomFP++
			}
			if ac[j] {
				compactFP++
			}
		}
		probes += len(absent)
	}
	bloomRate, compactRate := float64(bloomFP)/float64(probes), float64(compactFP)/float64(probes)
	t.Logf("false positives at 10 bits per key, 100 keys: Bloom %.3f%%, compact %.3f%%", 100*bloomRate, 100*compactRate)
	if bloomRate < 0.005 || bloomRate > 0.015 {
		t.Fatalf("Bloom rate %v: not LevelDB's ~0.9%%", bloomRate)
	}
	if compactRate >= 0.6*bloomRate || compactFP == 0 {
		t.Fatalf("compact rate %v, Bloom rate %v: want compact < 0.6 x Bloom (and > 0)", compactRate, bloomRate)
	}
}

func TestNewPolicyForFPRateCompactMeetsTarget(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	p := mustForFPRate(t, 0.01, FormatCompact)
	fp, probes := 0, 0
	for i := 0; i < 100; i++ {
		keys := fixedKeys(rng, 100, 16)
		absent := fixedKeys(rng, 1000, 17)
		f, _ := p.CreateFilter(keys)
		got, _ := p.MayMatchBatch(absent, f)
		for _, m := range got {
			if m {
				fp++
			}
		}
		probes += len(absent)
	}
	if rate := float64(fp) / float64(probes); rate < 0.003 || rate > 0.02 {
		t.Errorf("NewPolicyForFPRate(0.01, compact) measures %v", rate)
	}
}

func TestCompactTooFewBitsMatchEverything(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for _, bpk := range []float64{0, 1} {
		p := mustCompact(t, bpk)
		f, _ := p.CreateFilter(randKeys(rng, 100, 40))
		got, _ := p.MayMatchBatch(randKeys(rng, 300, 40), f)
		if !reflect.DeepEqual(got, trues(300)) {
			t.Errorf("bpk %v: a filter with no room for fingerprints answered no match", bpk)
		}
	}
}

func TestCompactStatsAndClose(t *testing.T) {
	uncounted, err := NewCompactPolicy(10)
	if err != nil {
		t.Fatal(err)
	}
	p, err := uncounted.Counted()
	uncounted.Close()
	if err != nil || p.Format() != FormatCompact {
		t.Fatalf("Counted() = %v, %v", p, err)
	}
	f, _ := p.CreateFilter([][]byte{[]byte("a"), []byte("b"), []byte("b")})
	noMatch := queryCountingNoMatch(p, f, []string{"a", "b", "x", "y"}, []string{"a", "q"})
	want := Stats{FiltersBuilt: 1, KeysAdded: 3, Queries: 6, NoMatch: noMatch}
	if s, err := p.Stats(); err != nil || s != want {
		t.Errorf("Stats() = %+v, %v; want %+v", s, err, want)
	}
	p.Close()
	if _, err := p.CreateFilter(nil); !errors.Is(err, ErrClosed) {
		t.Errorf("CreateFilter after Close: %v", err)
	}
	if !p.MayMatch([]byte("zzz"), f) {
		t.Errorf("a closed policy must answer may-match")
	}
}

func ExampleNewCompactPolicy() {
	p, err := NewCompactPolicy(10)
	if err != nil {
		panic(err)
	}
	defer p.Close()
	filter, _ := p.CreateFilter([][]byte{[]byte("hello"), []byte("world")})
	fmt.Println(p.Format(), p.BitsPerKey(), len(filter), filter[len(filter)-1] == 31)
	fmt.Println(p.MayMatch([]byte("hello"), filter), p.MayMatch([]byte("world"), filter))
	// Output:
	// compact 10 9 true
	// true true
}

func ExampleNewPolicyForFPRate() {
	p, err := NewPolicyForFPRate(0.01, FormatBloom)
	if err != nil {
		panic(err)
	}
	defer p.Close()
	fmt.Println(p.Format(), p.BitsPerKey())
	// Output:
	// bloom 10
}
