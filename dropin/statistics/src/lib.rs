//! The drop-in's statistics file (`LEVELDB_BLOOM_STATS_FILE`), one home for its schema: the
//! drop-in writes it, `leveldb-bloom run` reads and sums it, and the test suites read it as
//! text. One `name=value` line a field, then one line per LevelDB said of:
//!
//! ```text
//! served=yes                 # yes, no (no policy asked for), declined (none served), partly
//! format=bloom               # the formats the drop-in's policies build (bloom, compact, or
//!                            #   bloom,compact), else the one asked for
//! bits_per_key=program       # or the value of LEVELDB_BLOOM_BITS_PER_KEY
//! dropin_policies=2          # NewBloomFilterPolicy calls answered, of which:
//! policies_served=2          #   the drop-in's policy (its queries, the filters it asked for)
//! policies_declined=0        #   the LevelDB's own, unchanged (it does not speak the format)
//! policies_refused=0         #   none (NULL: no code to write the LevelDB's strings with)
//! filters_built=667          # filters made for the drop-in's policies, and their keys
//! keys_added=110000
//! queries=199999             # queries the drop-in answered, and "no match" among them
//! no_match=99466
//! pid=4242                   # the process that wrote the file
//! loaded_at_ns=17959...      # when the drop-in was loaded in it (real-time clock)
//! forked_from=4241           # only in a forked child: its parent
//! started=123456             # when the process started (clock ticks after boot), if known
//! copy=1795...-7f3a...:2,2,0,0,667,110000,199999,99466   # one line a copy of the drop-in
//!                            #   in the process: its counters, in the order above
//! leveldb=the LevelDB in /usr/lib/x86_64-linux-gnu/libleveldb.so.1d: served, its own Bloom policy writes
//! declined=the LevelDB in ./fork.so (its Bloom policy is named ...); its own policy writes and answers
//! refused=...; no filter policy
//! ```
//!
//! A forked child counts the work it did itself (its parent's file has what came before).
//! Where several copies of the drop-in serve one process (libraries that each link it in),
//! each rewrites its own `copy=` line and the counters above are their sums.

use leveldb_bloom::Format;

/// One process's statistics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Statistics {
    /// The formats the drop-in's policies build (none: not said).
    pub formats: Vec<Format>,
    /// The bits per key the environment set; `None` where the program's own are used.
    pub bits_per_key: Option<f64>,
    /// The counters, summed over every copy of the drop-in in the process.
    pub counters: Counters,
    pub pid: u64,
    pub loaded_at_ns: u128,
    pub forked_from: Option<u64>,
    /// When the process started (clock ticks after boot): with `pid`, which process wrote.
    pub started: Option<u64>,
    /// Each copy of the drop-in's own counters (`counters` sums them).
    pub copies: Vec<Copy>,
    /// For each LevelDB served: which one, and whose code writes its filters.
    pub served: Vec<String>,
    /// For each LevelDB declined: which one, and why.
    pub declined: Vec<String>,
    /// For each policy refused: why.
    pub refused: Vec<String>,
}

/// One copy of the drop-in in a process: who it is, and its counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copy {
    pub id: String,
    pub counters: Counters,
}

/// [`Counters`] from one list of its fields, in the file's order: the struct, its names in
/// the file and its values as an array all follow the list.
macro_rules! counters {
    ($($(#[doc = $doc:literal])* $name:ident,)*) => {
        /// What the drop-in counts, in the file's order (a `copy=` line's too).
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize))]
        pub struct Counters {
            $($(#[doc = $doc])* pub $name: u64,)*
        }

        impl Counters {
            /// Their names in the file, in its order.
            pub const NAMES: [&'static str; 8] = [$(stringify!($name)),*];

            /// The values, in the file's order.
            pub const fn to_array(self) -> [u64; 8] {
                [$(self.$name),*]
            }

            /// The counters of values in the file's order.
            pub const fn from_array(values: [u64; 8]) -> Counters {
                let [$($name),*] = values;
                Counters { $($name),* }
            }
        }
    };
}

counters! {
    /// `NewBloomFilterPolicy` calls answered, of which: with the drop-in's policy (served),
    /// with the LevelDB's own (declined), with none (refused).
    dropin_policies,
    policies_served,
    policies_declined,
    policies_refused,
    /// Filters made for the drop-in's policies, and their keys.
    filters_built,
    keys_added,
    /// Queries the drop-in's policies answered, and "no match" among them.
    queries,
    no_match,
}

impl Counters {
    /// Each counter of `self` and `other` added (at most `u64::MAX`).
    pub fn plus(self, other: Counters) -> Counters {
        self.zip(other, u64::saturating_add)
    }

    /// Each counter of `self` less `other`'s (at least 0): what came since `other`.
    pub fn since(self, other: Counters) -> Counters {
        self.zip(other, u64::saturating_sub)
    }

    fn zip(self, other: Counters, f: fn(u64, u64) -> u64) -> Counters {
        let (a, b) = (self.to_array(), other.to_array());
        Counters::from_array(std::array::from_fn(|i| f(a[i], b[i])))
    }
}

/// What the file's `served=` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// No policy was asked for.
    No,
    /// Every policy asked for was the drop-in's.
    Yes,
    /// Some were, some were not.
    Partly,
    /// None was.
    Declined,
}

impl Served {
    pub const fn name(self) -> &'static str {
        match self {
            Served::No => "no",
            Served::Yes => "yes",
            Served::Partly => "partly",
            Served::Declined => "declined",
        }
    }
}

impl Statistics {
    /// Whether the drop-in served.
    pub fn served(&self) -> Served {
        let counters = &self.counters;
        match (
            counters.policies_served,
            counters.policies_declined + counters.policies_refused,
        ) {
            (0, 0) => Served::No,
            (_, 0) => Served::Yes,
            (0, _) => Served::Declined,
            _ => Served::Partly,
        }
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut text = format!("served={}\n", self.served().name());
        let names: Vec<&str> = self.formats.iter().map(|f| f.name()).collect();
        let format = if names.is_empty() {
            "?".to_owned()
        } else {
            names.join(",")
        };
        let bits = self
            .bits_per_key
            .map_or_else(|| "program".to_owned(), |bits| bits.to_string());
        text.push_str(&format!("format={format}\nbits_per_key={bits}\n"));
        for (name, value) in Counters::NAMES.iter().zip(self.counters.to_array()) {
            text.push_str(&format!("{name}={value}\n"));
        }
        text.push_str(&format!(
            "pid={}\nloaded_at_ns={}\n",
            self.pid, self.loaded_at_ns
        ));
        if let Some(parent) = self.forked_from {
            text.push_str(&format!("forked_from={parent}\n"));
        }
        if let Some(started) = self.started {
            text.push_str(&format!("started={started}\n"));
        }
        for copy in &self.copies {
            let counters: Vec<String> = copy.counters.to_array().map(|n| n.to_string()).into();
            text.push_str(&format!("copy={}:{}\n", copy.id, counters.join(",")));
        }
        for (key, lines) in [
            ("leveldb", &self.served),
            ("declined", &self.declined),
            ("refused", &self.refused),
        ] {
            for line in lines {
                text.push_str(&format!("{key}={line}\n"));
            }
        }
        text
    }

    /// These statistics (one copy's, with its `copy=` line) with what `theirs` (the same
    /// process's file) says of the other copies: their lines kept, the counters summed over
    /// every copy, what each said said once, the formats of all.
    pub fn with_other_copies(mut self, theirs: &Statistics) -> Statistics {
        let ours: Vec<&str> = self.copies.iter().map(|c| c.id.as_str()).collect();
        let others: Vec<Copy> = theirs
            .copies
            .iter()
            .filter(|c| !ours.contains(&c.id.as_str()))
            .cloned()
            .collect();
        self.copies.extend(others);
        self.counters =
            (self.copies.iter()).fold(Counters::default(), |sum, copy| sum.plus(copy.counters));
        for (ours, theirs) in [
            (&mut self.served, &theirs.served),
            (&mut self.declined, &theirs.declined),
            (&mut self.refused, &theirs.refused),
        ] {
            for line in theirs {
                if !ours.contains(line) {
                    ours.push(line.clone());
                }
            }
        }
        for format in &theirs.formats {
            if !self.formats.contains(format) {
                self.formats.push(*format);
            }
        }
        self.loaded_at_ns = self.loaded_at_ns.min(theirs.loaded_at_ns);
        self
    }

    /// The statistics a file's text says; what it does not say (an older drop-in's file, a
    /// line cut off) is left at its default.
    pub fn parse(text: &str) -> Statistics {
        let mut stats = Statistics::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let number = || value.parse::<u64>().unwrap_or(0);
            if let Some(i) = Counters::NAMES.iter().position(|&name| name == key) {
                let mut values = stats.counters.to_array();
                values[i] = number();
                stats.counters = Counters::from_array(values);
                continue;
            }
            match key {
                "format" => {
                    stats.formats = value.split(',').filter_map(Format::from_name).collect();
                }
                "bits_per_key" => stats.bits_per_key = value.parse().ok(),
                "pid" => stats.pid = number(),
                "loaded_at_ns" => stats.loaded_at_ns = value.parse().unwrap_or(0),
                "forked_from" => stats.forked_from = value.parse().ok(),
                "started" => stats.started = value.parse().ok(),
                "copy" => stats.copies.extend(Copy::parse(value)),
                "leveldb" => stats.served.push(value.to_owned()),
                "declined" => stats.declined.push(value.to_owned()),
                "refused" => stats.refused.push(value.to_owned()),
                _ => {}
            }
        }
        stats
    }
}

impl Copy {
    /// A `copy=` line's value: `ID:N,N,N,N,N,N,N,N`.
    fn parse(value: &str) -> Option<Copy> {
        let (id, numbers) = value.rsplit_once(':')?;
        let numbers: Vec<u64> = numbers
            .split(',')
            .map(|n| n.parse().ok())
            .collect::<Option<_>>()?;
        Some(Copy {
            id: id.to_owned(),
            counters: Counters::from_array(numbers.try_into().ok()?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_reads_back_as_written() {
        let stats = Statistics {
            formats: vec![Format::Bloom, Format::Compact],
            bits_per_key: Some(7.5),
            counters: Counters {
                dropin_policies: 3,
                policies_served: 2,
                policies_declined: 1,
                filters_built: 10,
                keys_added: 1000,
                queries: 500,
                no_match: 400,
                ..Counters::default()
            },
            pid: 42,
            loaded_at_ns: 1_795_916_973_688_917_873,
            forked_from: Some(41),
            served: vec!["the LevelDB in a.so: served, its C API writes".to_owned()],
            declined: vec![
                "the LevelDB in b.so (why); its own policy writes and answers".to_owned(),
            ],
            ..Statistics::default()
        };
        let text = stats.to_text();
        assert!(
            text.starts_with("served=partly\nformat=bloom,compact\nbits_per_key=7.5\n"),
            "{text}"
        );
        assert_eq!(Statistics::parse(&text), stats);
    }

    #[test]
    fn copies_in_one_process_sum_and_each_replaces_only_its_own_line() {
        let copy = |id: &str, served: u64, line: &str, format| {
            let counters = Counters::from_array([served, served, 0, 0, 10 * served, 0, 0, 0]);
            Statistics {
                formats: vec![format],
                counters,
                pid: 9,
                loaded_at_ns: served.into(),
                served: vec![line.to_owned()],
                copies: vec![Copy {
                    id: id.to_owned(),
                    counters,
                }],
                ..Statistics::default()
            }
        };
        let a = copy("a", 2, "leveldb=A", Format::Bloom);
        let file = Statistics::parse(&a.to_text());
        let both = copy("b", 3, "leveldb=B", Format::Compact).with_other_copies(&file);
        assert_eq!(
            (both.counters.policies_served, both.counters.filters_built),
            (5, 50)
        );
        assert_eq!(both.served, ["leveldb=B", "leveldb=A"]);
        assert_eq!(both.formats, [Format::Compact, Format::Bloom]);
        assert_eq!(both.loaded_at_ns, 2);
        // A's later word replaces its own line only.
        let file = Statistics::parse(&both.to_text());
        let again = copy("a", 4, "leveldb=A", Format::Bloom).with_other_copies(&file);
        assert_eq!(again.counters.policies_served, 7);
        assert_eq!(again.copies.len(), 2);
        assert_eq!(Statistics::parse(&again.to_text()), again);
    }

    #[test]
    fn the_program_s_bits_and_an_unknown_format_are_none() {
        let stats = Statistics::parse("format=bloom\nbits_per_key=program\npid=7\n");
        assert_eq!(stats.formats, [Format::Bloom]);
        assert_eq!(stats.bits_per_key, None);
        assert_eq!(stats.served(), Served::No);
        assert!(Statistics::parse("format=other\n").formats.is_empty());
    }

    #[test]
    fn served_says_what_the_policies_were() {
        let with = |served, declined, refused| Statistics {
            counters: Counters {
                policies_served: served,
                policies_declined: declined,
                policies_refused: refused,
                ..Counters::default()
            },
            ..Statistics::default()
        };
        assert_eq!(with(0, 0, 0).served(), Served::No);
        assert_eq!(with(2, 0, 0).served(), Served::Yes);
        assert_eq!(with(2, 1, 0).served(), Served::Partly);
        assert_eq!(with(0, 0, 1).served(), Served::Declined);
    }
}
