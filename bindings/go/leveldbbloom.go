// Package leveldbbloom wraps the leveldb-bloom C library (include/leveldb_bloom.h) with
// cgo: LevelDB's built-in Bloom filter policy, "leveldb.BuiltinBloomFilter2", whose filters
// are byte for byte those of LevelDB 1.23.
//
// Compact filters (opt-in): NewCompactPolicy(bitsPerKey) and NewPolicyForFPRate(rate,
// FormatCompact) build filters in the library's compact format, as long as LevelDB's Bloom
// filters at the same bits per key (fractional bits per key allowed, 0 to 32) with far fewer
// false positives (measured: docs/benchmarks.md, "The compact format's gain"). A compact policy keeps LevelDB's name and answers
// LevelDB's Bloom filters exactly as LevelDB does; its own filters end in the byte 31 (all
// zero when too few bits per key leave no room for a filter), which stock LevelDB and Bloom
// policies answer "may match", so tables written with them stay readable everywhere.
//
// Linking: the cgo flags come from pkg-config (`leveldb_bloom.pc`), so the package builds
// against an installed prefix, e.g. after `cmake --install build --prefix /opt/lb`:
//
//	PKG_CONFIG_PATH=/opt/lb/lib/pkgconfig LD_LIBRARY_PATH=/opt/lb/lib go test ./...
//
// or against the repository's build tree (`cargo build --release`), whose .pc file is
// bindings/go/pkgconfig (it records target/release as the run path):
//
//	PKG_CONFIG_PATH=$PWD/bindings/go/pkgconfig go test ./...
//
// Ownership: a Policy owns one C policy, freed by Close (once; later calls do nothing) or,
// as a safety net, by a finalizer. Thread safety, as in the C header: a Policy may be used
// by any number of goroutines at once; Close waits for calls in flight.
package leveldbbloom

/*
#cgo pkg-config: leveldb_bloom
#include <stdint.h>
#include <stdlib.h>
#include "leveldb_bloom.h"

// cgo may not pass C a Go array of Go pointers, so keys cross as one packed buffer and
// their lengths; the pointer array the C API wants is built here, in C memory.
static const char **lb_key_pointers(const char *data, const size_t *lens, size_t n) {
	const char **ptrs = (const char **)malloc((n ? n : 1) * sizeof(const char *));
	if (ptrs == NULL) return NULL;
	size_t off = 0;
	for (size_t i = 0; i < n; i++) {
		ptrs[i] = data == NULL ? NULL : data + off;
		off += lens[i];
	}
	return ptrs;
}

static int lb_create_filter_packed(const leveldb_bloom_policy *policy, const char *data,
                                   const size_t *lens, size_t n, uint8_t *out, size_t cap,
                                   size_t *out_len) {
	const char **ptrs = lb_key_pointers(data, lens, n);
	if (ptrs == NULL) return LEVELDB_BLOOM_ERR_OUT_OF_MEMORY;
	int status = leveldb_bloom_create_filter(policy, n ? ptrs : NULL, lens, n, out, cap, out_len);
	free(ptrs);
	return status;
}

static int lb_may_match_batch_packed(const leveldb_bloom_policy *policy, const char *data,
                                     const size_t *lens, size_t n, const uint8_t *filter,
                                     size_t filter_len, uint8_t *results) {
	const char **ptrs = lb_key_pointers(data, lens, n);
	if (ptrs == NULL) return LEVELDB_BLOOM_ERR_OUT_OF_MEMORY;
	int status = leveldb_bloom_key_may_match_batch(policy, n ? ptrs : NULL, lens, n, filter,
	                                               filter_len, results);
	free(ptrs);
	return status;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"
)

// PackageVersion is the C library version this package is written against.
const PackageVersion = "0.1.0"

// Status is a status code of the C API (leveldb_bloom_status).
type Status int

// The C API's status codes.
const (
	OK                 Status = C.LEVELDB_BLOOM_OK
	ErrNullArgument    Status = C.LEVELDB_BLOOM_ERR_NULL_ARGUMENT
	ErrInvalidArgument Status = C.LEVELDB_BLOOM_ERR_INVALID_ARGUMENT
	ErrBufferTooSmall  Status = C.LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL
	ErrOffsetBackwards Status = C.LEVELDB_BLOOM_ERR_OFFSET_BACKWARDS
	ErrAlreadyFinished Status = C.LEVELDB_BLOOM_ERR_ALREADY_FINISHED
	ErrPanic           Status = C.LEVELDB_BLOOM_ERR_PANIC
	ErrTooLarge        Status = C.LEVELDB_BLOOM_ERR_TOO_LARGE
	ErrOutOfMemory     Status = C.LEVELDB_BLOOM_ERR_OUT_OF_MEMORY
	ErrNotCounted      Status = C.LEVELDB_BLOOM_ERR_NOT_COUNTED
)

// String is the library's description of the status (leveldb_bloom_status_message).
func (s Status) String() string {
	if int64(s) < math.MinInt32 || int64(s) > math.MaxInt32 {
		return "unknown status"
	}
	return C.GoString(C.leveldb_bloom_status_message(C.int(s)))
}

// Error is an error status returned by the C library.
type Error struct {
	Op     string // the call that failed
	Status Status
}

func (e *Error) Error() string {
	return fmt.Sprintf("leveldbbloom: %s: %s (status %d)", e.Op, e.Status, int(e.Status))
}

// Is makes errors.Is(err, &Error{Status: s}) match any error with status s.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Status == e.Status && (t.Op == "" || t.Op == e.Op)
}

func check(status C.int, op string) error {
	if status == C.LEVELDB_BLOOM_OK {
		return nil
	}
	return &Error{Op: op, Status: Status(status)}
}

var (
	// ErrNegativeBitsPerKey is returned by NewPolicy for bitsPerKey < 0.
	ErrNegativeBitsPerKey = errors.New("leveldbbloom: bits per key must not be negative")
	// ErrInvalidBitsPerKey is returned (wrapped) by NewCompactPolicy for bits per key that
	// are negative, above MaxCompactBitsPerKey, NaN or infinite.
	ErrInvalidBitsPerKey = errors.New("leveldbbloom: compact bits per key must be a number from 0 to 32")
	// ErrInvalidFPRate is returned (wrapped) by NewPolicyForFPRate for a rate outside
	// (0, 1), NaN, or beyond the format's reach.
	ErrInvalidFPRate = errors.New("leveldbbloom: false-positive rate out of range")
	// ErrUnknownFormat is returned (wrapped) by NewPolicyForFPRate for a Format it does not
	// know.
	ErrUnknownFormat = errors.New("leveldbbloom: unknown filter format")
	// ErrClosed is returned by the methods of a closed Policy.
	ErrClosed = errors.New("leveldbbloom: policy is closed")
)

// Version is the C library's version (leveldb_bloom_version).
func Version() string { return C.GoString(C.leveldb_bloom_version()) }

// Stats are filter statistics (leveldb_bloom_stats).
type Stats struct {
	FiltersBuilt uint64 // filters created, however many keys
	KeysAdded    uint64 // keys added to them, duplicates included
	Queries      uint64 // queries answered (single, batch entry, filter block)
	NoMatch      uint64 // queries answered "no match": table reads avoided
}

func statsFromC(s *C.leveldb_bloom_stats) Stats {
	return Stats{uint64(s.filters_built), uint64(s.keys_added), uint64(s.queries), uint64(s.no_match)}
}

// GlobalStats is what every counted policy in the process (Policy.Counted, destroyed ones
// included) has counted since start or the last ResetGlobalStats.
func GlobalStats() (Stats, error) {
	var s C.leveldb_bloom_stats
	if err := check(C.leveldb_bloom_global_stats(&s), "GlobalStats"); err != nil {
		return Stats{}, err
	}
	return statsFromC(&s), nil
}

// ResetGlobalStats restarts the process-wide counts from zero.
func ResetGlobalStats() { C.leveldb_bloom_global_stats_reset() }

// Format is a filter format (leveldb_bloom_format).
type Format int

// The filter formats.
const (
	// FormatBloom is LevelDB's own Bloom filters, byte-identical to LevelDB's.
	FormatBloom Format = C.LEVELDB_BLOOM_FORMAT_BLOOM
	// FormatCompact is the opt-in compact format: far fewer false positives than the Bloom
	// filter's in the same memory; stock LevelDB answers these filters "may match".
	FormatCompact Format = C.LEVELDB_BLOOM_FORMAT_COMPACT
)

// String is "bloom", "compact", or "Format(n)" for an unknown value.
func (f Format) String() string {
	switch f {
	case FormatBloom:
		return "bloom"
	case FormatCompact:
		return "compact"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// MaxCompactBitsPerKey is the largest bits per key NewCompactPolicy accepts.
const MaxCompactBitsPerKey = 32.0

// Policy is LevelDB's built-in filter policy ("leveldb.BuiltinBloomFilter2") for one
// bits-per-key setting: LevelDB's Bloom filters (NewPolicy) or, opt-in, the compact format
// (NewCompactPolicy). Either kind answers LevelDB's Bloom filters exactly as LevelDB does;
// a compact filter is read by a compact policy, while a Bloom policy (as stock LevelDB)
// answers it "may match".
type Policy struct {
	mu         sync.RWMutex // read-held by calls, write-held by Close
	p          *C.leveldb_bloom_policy
	bitsPerKey float64
	format     Format
}

// newPolicy takes ownership of a C policy (nil: ErrOutOfMemory for op) and records what
// never changes, so that it stays readable after Close.
func newPolicy(c *C.leveldb_bloom_policy, op string) (*Policy, error) {
	if c == nil {
		return nil, &Error{Op: op, Status: ErrOutOfMemory}
	}
	p := &Policy{
		p:          c,
		bitsPerKey: float64(C.leveldb_bloom_policy_bits_per_key(c)),
		format:     Format(C.leveldb_bloom_policy_format(c)),
	}
	runtime.SetFinalizer(p, (*Policy).Close)
	return p, nil
}

// NewPolicy creates the policy LevelDB's NewBloomFilterPolicy(bitsPerKey) is.
// bitsPerKey 0 is valid; a negative one is ErrNegativeBitsPerKey.
func NewPolicy(bitsPerKey int) (*Policy, error) {
	if bitsPerKey < 0 {
		return nil, ErrNegativeBitsPerKey
	}
	if bitsPerKey > math.MaxInt32 {
		return nil, fmt.Errorf("leveldbbloom: bits per key %d does not fit a C int", bitsPerKey)
	}
	return newPolicy(C.leveldb_bloom_policy_create(C.int(bitsPerKey)), "NewPolicy")
}

// NewCompactPolicy creates a policy of the compact format: filters as long as LevelDB's
// Bloom filters at the same bits per key, with far fewer false positives.
// bitsPerKey may be fractional, from 0 to MaxCompactBitsPerKey (below about 3 no fingerprint
// fits and the filters answer "may match" for every key); anything else, NaN and the
// infinities included, is ErrInvalidBitsPerKey.
func NewCompactPolicy(bitsPerKey float64) (*Policy, error) {
	if !(bitsPerKey >= 0 && bitsPerKey <= MaxCompactBitsPerKey) { // NaN fails too
		return nil, fmt.Errorf("%w, got %v", ErrInvalidBitsPerKey, bitsPerKey)
	}
	return newPolicy(C.leveldb_bloom_policy_create_compact(C.double(bitsPerKey)), "NewCompactPolicy")
}

// NewPolicyForFPRate creates the policy of format with the fewest bits per key expected to
// give at most rate false positives (BitsPerKey reports the choice). FormatBloom: the
// smallest whole bits per key (1 to 100) whose standard model (1 - e^(-k/b))^k reaches rate
// (LevelDB's filters measure somewhat worse). FormatCompact: the fewest bits per key, in
// 64ths, at which every filter of 50 to 10,000,000 keys gets at most rate
// (docs/compact-format.md, "Building"; 1% takes 7.39 bits per key, and filters of 1,000 keys
// then get about 0.73%; smaller filters may get more).
//
// A rate outside (0, 1), NaN, or beyond the format's reach (more than 100 bits per key for
// Bloom, below about 2.5e-18; more than 32 for compact, below about 8e-10) is
// ErrInvalidFPRate; an unknown format is ErrUnknownFormat.
func NewPolicyForFPRate(rate float64, format Format) (*Policy, error) {
	if format != FormatBloom && format != FormatCompact {
		return nil, fmt.Errorf("%w: %d", ErrUnknownFormat, int(format))
	}
	if !(rate > 0 && rate < 1) { // NaN fails too
		return nil, fmt.Errorf("%w: %v is not in (0, 1)", ErrInvalidFPRate, rate)
	}
	c := C.leveldb_bloom_policy_create_for_fp_rate(C.double(rate), C.int(format))
	if c == nil {
		// The arguments were checked: NULL is a rate beyond the format's reach or, if even
		// an easy rate fails, memory running out.
		if probe := C.leveldb_bloom_policy_create_for_fp_rate(0.5, C.int(format)); probe != nil {
			C.leveldb_bloom_policy_destroy(probe)
			return nil, fmt.Errorf("%w: %v is beyond the reach of the %s format", ErrInvalidFPRate, rate, format)
		}
	}
	return newPolicy(c, "NewPolicyForFPRate")
}

// Counted returns a new policy that builds and answers exactly as p does and also counts
// its work, for Stats and GlobalStats (leveldb_bloom_policy_counted). Other policies count
// nothing, and their queries do no work for statistics. p stays open and unchanged; the
// caller closes both.
func (p *Policy) Counted() (*Policy, error) {
	c := p.acquire()
	if c == nil {
		return nil, ErrClosed
	}
	defer p.mu.RUnlock()
	return newPolicy(C.leveldb_bloom_policy_counted(c), "Counted")
}

// Close frees the C policy. It waits for calls in flight; later calls do nothing.
func (p *Policy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.p != nil {
		C.leveldb_bloom_policy_destroy(p.p)
		p.p = nil
		runtime.SetFinalizer(p, nil)
	}
	return nil
}

// acquire read-locks the policy and returns its C object (nil when closed: then it
// has already unlocked).
func (p *Policy) acquire() *C.leveldb_bloom_policy {
	p.mu.RLock()
	if p.p == nil {
		p.mu.RUnlock()
	}
	return p.p
}

// Name is "leveldb.BuiltinBloomFilter2", the name LevelDB records in tables.
func (p *Policy) Name() string { return C.GoString(C.leveldb_bloom_policy_name(nil)) }

// BitsPerKey is the setting the policy was created with (or chose, for
// NewPolicyForFPRate); whole for a Bloom policy, possibly fractional for a compact one.
func (p *Policy) BitsPerKey() float64 { return p.bitsPerKey }

// Format is the format of the filters the policy builds.
func (p *Policy) Format() Format { return p.format }

// FilterLen is the byte length of the filter for numKeys keys, the same for both formats at
// the same bits per key.
func (p *Policy) FilterLen(numKeys int) (int, error) {
	if numKeys < 0 {
		return 0, &Error{Op: "FilterLen", Status: ErrInvalidArgument}
	}
	c := p.acquire()
	if c == nil {
		return 0, ErrClosed
	}
	defer p.mu.RUnlock()
	n := C.leveldb_bloom_filter_len(c, C.size_t(numKeys))
	if n == 0 || uint64(n) > math.MaxInt {
		return 0, &Error{Op: "FilterLen", Status: ErrTooLarge}
	}
	return int(n), nil
}

// packed is a key list as cgo may pass it: one buffer and the lengths.
type packed struct {
	data []byte
	lens []C.size_t
}

func pack(keys [][]byte) packed {
	total := 0
	for _, k := range keys {
		total += len(k)
	}
	pk := packed{data: make([]byte, 0, total), lens: make([]C.size_t, len(keys))}
	for i, k := range keys {
		pk.data = append(pk.data, k...)
		pk.lens[i] = C.size_t(len(k))
	}
	return pk
}

func (pk *packed) dataPtr() *C.char {
	if len(pk.data) == 0 {
		return nil
	}
	return (*C.char)(unsafe.Pointer(&pk.data[0]))
}

func (pk *packed) lensPtr() *C.size_t {
	if len(pk.lens) == 0 {
		return nil
	}
	return &pk.lens[0]
}

func bytesPtr(b []byte) *C.char {
	if len(b) == 0 {
		return nil
	}
	return (*C.char)(unsafe.Pointer(&b[0]))
}

// emptyFilter backs every empty filter passed to C (its length is passed as 0).
var emptyFilter = [1]byte{}

// filterPtr is never NULL: (NULL, 0) would be "cannot answer" (may match) to the C API,
// where an empty filter is "no match" to LevelDB.
func filterPtr(f []byte) *C.uint8_t {
	if len(f) == 0 {
		return (*C.uint8_t)(unsafe.Pointer(&emptyFilter[0]))
	}
	return (*C.uint8_t)(unsafe.Pointer(&f[0]))
}

// CreateFilter builds the filter for keys: byte-identical to LevelDB's CreateFilter for a
// Bloom policy, a compact filter for a compact one.
func (p *Policy) CreateFilter(keys [][]byte) ([]byte, error) {
	c := p.acquire()
	if c == nil {
		return nil, ErrClosed
	}
	defer p.mu.RUnlock()
	need := C.leveldb_bloom_filter_len(c, C.size_t(len(keys)))
	if need == 0 || uint64(need) > math.MaxInt {
		return nil, &Error{Op: "CreateFilter", Status: ErrTooLarge}
	}
	pk := pack(keys)
	out := make([]byte, int(need))
	var outLen C.size_t
	status := C.lb_create_filter_packed(c, pk.dataPtr(), pk.lensPtr(), C.size_t(len(keys)),
		(*C.uint8_t)(unsafe.Pointer(&out[0])), need, &outLen)
	if err := check(status, "CreateFilter"); err != nil {
		return nil, err
	}
	return out[:int(outLen)], nil
}

// MayMatch reports whether key may be in filter (built by this library or by LevelDB with
// any bits per key), answered exactly as LevelDB answers, malformed filters included.
// false means certainly absent. A closed policy answers true, as the C API does for a
// NULL policy: a wrong "no" would hide data. A compact policy reads a filter of 2 or more
// bytes ending in the byte 31 as a compact filter (which LevelDB, and a Bloom policy,
// answer "may match").
func (p *Policy) MayMatch(key, filter []byte) bool {
	c := p.acquire()
	if c == nil {
		return true
	}
	defer p.mu.RUnlock()
	return bool(C.leveldb_bloom_key_may_match(c, bytesPtr(key), C.size_t(len(key)),
		filterPtr(filter), C.size_t(len(filter))))
}

// MayMatchBatch answers MayMatch for every key against one filter, in one C call.
func (p *Policy) MayMatchBatch(keys [][]byte, filter []byte) ([]bool, error) {
	c := p.acquire()
	if c == nil {
		return nil, ErrClosed
	}
	defer p.mu.RUnlock()
	pk := pack(keys)
	results := make([]byte, len(keys)+1) // never empty: &results[0] must exist
	status := C.lb_may_match_batch_packed(c, pk.dataPtr(), pk.lensPtr(), C.size_t(len(keys)),
		filterPtr(filter), C.size_t(len(filter)),
		(*C.uint8_t)(unsafe.Pointer(&results[0])))
	if err := check(status, "MayMatchBatch"); err != nil {
		return nil, err
	}
	answers := make([]bool, len(keys))
	for i := range answers {
		answers[i] = results[i] != 0
	}
	return answers, nil
}

// Stats is what this policy has counted since its creation or its last ResetStats; an
// *Error with ErrNotCounted unless the policy was made by Counted.
func (p *Policy) Stats() (Stats, error) {
	c := p.acquire()
	if c == nil {
		return Stats{}, ErrClosed
	}
	defer p.mu.RUnlock()
	var s C.leveldb_bloom_stats
	if err := check(C.leveldb_bloom_policy_stats(c, &s), "Stats"); err != nil {
		return Stats{}, err
	}
	return statsFromC(&s), nil
}

// ResetStats restarts this policy's counts from zero; an *Error with ErrNotCounted unless
// the policy was made by Counted.
func (p *Policy) ResetStats() error {
	c := p.acquire()
	if c == nil {
		return ErrClosed
	}
	defer p.mu.RUnlock()
	return check(C.leveldb_bloom_policy_stats_reset(c), "ResetStats")
}
