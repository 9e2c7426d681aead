/* A wrapper library's Bloom policy function, in C, compiled -O2: a tail call, so that
 * leveldb::NewBloomFilterPolicy returns straight to whoever called shim_bloom (the host
 * program, not this object nor its LevelDB). */
const void *_ZN7leveldb20NewBloomFilterPolicyEi(int bits_per_key);

const void *shim_bloom(int bits_per_key) { return _ZN7leveldb20NewBloomFilterPolicyEi(bits_per_key); }
