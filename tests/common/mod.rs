//! Helpers shared by the integration tests that need reproducible random inputs without a
//! dependency.

/// splitmix64: a fixed seed gives the same inputs on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (> 0).
    #[allow(dead_code)] // not every test uses every helper
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            *b = self.next() as u8;
        }
    }

    /// `len` random bytes.
    #[allow(dead_code)]
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut bytes = vec![0; len];
        self.fill(&mut bytes);
        bytes
    }

    /// `min..min + spread` random bytes.
    #[allow(dead_code)]
    pub fn bytes_of_length(&mut self, min: u64, spread: u64) -> Vec<u8> {
        let len = min + self.below(spread);
        self.bytes(len as usize)
    }
}
