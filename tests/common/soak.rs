//! What the soak (`tests/soak.rs`) measures of its own process, its random choices and its
//! report.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

/// A small deterministic generator (xorshift): a run is repeatable from its seeds.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// This process's threads, descriptors, child processes (but its guardian; and those of them
/// that are zombies) and resident memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub threads: usize,
    /// Of them, HTTP workers (`mcp-*-http`): a pool that grows to the calls in flight and
    /// shrinks after 30 s idle.
    pub pool: usize,
    pub fds: usize,
    pub children: usize,
    pub zombies: usize,
    pub rss_kb: u64,
}

impl Counts {
    pub fn now() -> Counts {
        let me = std::process::id();
        let exe = |dir: &std::path::Path| std::fs::read_link(dir.join("exe")).ok();
        // A child running this process's own program is a fork: the stdio transport's
        // guardian, which lives as long as the process.
        let own = exe(std::path::Path::new("/proc/self"));
        let (mut children, mut zombies) = (0, 0);
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            if entry.file_name().to_string_lossy().parse::<u32>().is_err() {
                continue;
            }
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
            let Some((_, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            let mut fields = rest.split_whitespace();
            let state = fields.next().unwrap_or("");
            if fields.next().and_then(|p| p.parse::<u32>().ok()) == Some(me)
                && (state == "Z" || exe(&entry.path()) != own)
            {
                children += 1;
                zombies += usize::from(state == "Z");
            }
        }
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let rss_kb = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0);
        let names = thread_names();
        // A directory that cannot be read (no descriptor left) counts as over any bound.
        let entries = |dir: &str| std::fs::read_dir(dir).map_or(usize::MAX, |d| d.count());
        Counts {
            threads: if names.is_empty() {
                usize::MAX
            } else {
                names.values().sum()
            },
            pool: names
                .iter()
                .filter(|(k, _)| k.starts_with("mcp-") && k.ends_with("-http"))
                .map(|(_, n)| n)
                .sum(),
            fds: entries("/proc/self/fd"),
            children,
            zombies,
            rss_kb,
        }
    }

    /// The counts once `ok` holds of them, or `within` has passed (then the last ones).
    pub fn until(within: Duration, ok: impl Fn(&Counts) -> bool) -> Counts {
        let deadline = Instant::now() + within;
        loop {
            let now = Counts::now();
            if ok(&now) || Instant::now() > deadline {
                return now;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The counts once they stop falling (threads and processes that are ending end), at most
    /// five seconds on.
    pub fn settled(now: impl Fn() -> Counts) -> Counts {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut last = now();
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let next = now();
            let same = next.threads == last.threads
                && next.fds == last.fds
                && next.children == last.children
                && next.zombies == 0;
            if same || Instant::now() > deadline {
                return next;
            }
            last = next;
        }
    }

    /// Whether these counts are back to `base`: the same children, no zombie, threads and
    /// descriptors within their slack, resident memory within its own. HTTP workers may number
    /// up to `pool` (each with two descriptors, a kept-alive connection and a stream's), the
    /// other threads only their slack more than the baseline's; `kept` more descriptors are
    /// idle kept-alive connections (an HTTP client keeps the connections its concurrent calls
    /// opened).
    pub fn within(
        &self,
        base: &Counts,
        pool: usize,
        kept: usize,
        threads: usize,
        fds: usize,
        rss_kb: u64,
    ) -> Result<(), String> {
        let mut wrong = Vec::new();
        if self.pool > pool {
            wrong.push(format!("HTTP workers {} (at most {pool})", self.pool));
        }
        let fds = fds + 2 * self.pool.saturating_sub(base.pool) + kept;
        let (own, base_own) = (self.threads - self.pool, base.threads - base.pool);
        if self.children != base.children {
            wrong.push(format!(
                "children {} (baseline {})",
                self.children, base.children
            ));
        }
        if self.zombies > 0 {
            wrong.push(format!("{} zombie children", self.zombies));
        }
        if own > base_own + threads {
            wrong.push(format!(
                "threads but HTTP workers {own} (baseline {base_own})"
            ));
        }
        if self.fds > base.fds + fds {
            wrong.push(format!("descriptors {} (baseline {})", self.fds, base.fds));
        }
        if self.rss_kb > base.rss_kb + rss_kb {
            wrong.push(format!(
                "RSS {} KiB (baseline {})",
                self.rss_kb, base.rss_kb
            ));
        }
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(wrong.join(", "))
        }
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "threads {} ({} HTTP workers), descriptors {}, children {} ({} zombies), RSS {} KiB",
            self.threads, self.pool, self.fds, self.children, self.zombies, self.rss_kb
        )
    }
}

/// What a run saw.
pub struct Report<'a> {
    pub secs: u64,
    pub servers: usize,
    pub http: usize,
    /// Before the fleet started.
    pub before: Counts,
    /// The first quiet point (the fleet whole).
    pub baseline: Counts,
    /// When the last quiet point's run ended, the fleet still up.
    pub last: Counts,
    /// After the manager's close.
    pub after: Counts,
    /// (seconds, RSS KiB) at each quiet point.
    pub points: &'a [(f64, u64)],
    pub ops: Vec<(&'static str, u64)>,
}

/// How many entries of `dir` have each key (entries without one are left out).
fn tally(dir: &str, key: impl Fn(&std::path::Path) -> Option<String>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if let Some(k) = key(&entry.path()) {
            *out.entry(k).or_insert(0) += 1;
        }
    }
    out
}

/// How many of this process's threads have each name (for a breach's report).
pub fn thread_names() -> BTreeMap<String, usize> {
    tally("/proc/self/task", |task| {
        let name = std::fs::read_to_string(task.join("comm")).ok()?;
        Some(name.trim().to_owned())
    })
}

/// How many of this process's descriptors are of each kind (`socket`, `pipe`, a file's
/// directory...), for a breach's report.
pub fn fd_kinds() -> BTreeMap<String, usize> {
    tally("/proc/self/fd", |fd| {
        let target = std::fs::read_link(fd).ok()?;
        Some(
            target
                .to_string_lossy()
                .split(':')
                .next()
                .unwrap_or("")
                .to_owned(),
        )
    })
}

/// The least-squares slope of `points`, in KiB a minute.
pub fn slope_kb_per_min(points: &[(f64, u64)]) -> f64 {
    let n = points.len() as f64;
    if points.len() < 2 {
        return 0.0;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1 as f64).sum::<f64>() / n;
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 as f64 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        0.0
    } else {
        sxy / sxx * 60.0
    }
}

pub fn report(r: &Report<'_>) -> String {
    let ops: Vec<String> = r.ops.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let rss: Vec<u64> = r.points.iter().map(|p| p.1).collect();
    format!(
        "soak: {} s, {} servers ({} over HTTP), {} quiet points\n\
         soak: operations: {}\n\
         soak: before the fleet: {}\n\
         soak: first quiet point: {}\n\
         soak: last:              {}\n\
         soak: after close:       {}\n\
         soak: RSS at quiet points: min {} KiB, max {} KiB, slope {:.1} KiB/min\n",
        r.secs,
        r.servers,
        r.http,
        r.points.len(),
        ops.join(", "),
        r.before,
        r.baseline,
        r.last,
        r.after,
        rss.iter().min().unwrap_or(&0),
        rss.iter().max().unwrap_or(&0),
        slope_kb_per_min(r.points)
    )
}

/// A free loopback port below the system's ephemeral range (where no outgoing connection takes
/// it while its server restarts), from `rng`.
pub fn restartable_port(rng: &mut Rng) -> u16 {
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let (from, to) = (10_000u16, low.max(10_500));
    for _ in 0..1000 {
        let port = from + rng.below(u64::from(to - from)) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port between {from} and {to}");
}
