//! Progress of a long run: the loops hand (simulated time, flows done) to a hook at
//! most once per `period` of wall time, looking at the clock only every `STRIDE`
//! events, and once at the end. The hook only observes; returning `false` stops the
//! run (`Stopped`), which the caller turns into the hook's own error.

use std::time::{Duration, Instant};

/// Events between two looks at the clock: an event of the FB2010 runs costs about
/// 100 µs and a look at the clock about 25 ns, so a look every 16 events costs
/// nothing measurable while a report is at most 16 events late.
const STRIDE: u32 = 16;

/// The hook asked the run to stop.
#[derive(Debug)]
pub struct Stopped;

impl From<Stopped> for String {
    fn from(_: Stopped) -> String {
        "stopped by the progress hook".to_string()
    }
}

/// Calls `hook(t, flows_done)` at most once per `period` of wall time (`tick`, once
/// per event) and at the end (`end`).
pub struct Progress<'a> {
    hook: &'a mut dyn FnMut(f64, u64) -> bool,
    period: Duration,
    due: Instant,
    n: u32,
}

impl<'a> Progress<'a> {
    /// A reporter calling `hook` every `period` at most (the first report one `period`
    /// from now).
    pub fn new(hook: &'a mut dyn FnMut(f64, u64) -> bool, period: Duration) -> Self {
        Progress { hook, period, due: Instant::now() + period, n: 0 }
    }

    /// One event done: report if `period` has passed since the last report.
    #[inline]
    pub fn tick(&mut self, t: f64, done: u64) -> Result<(), Stopped> {
        self.n += 1;
        if self.n < STRIDE {
            return Ok(());
        }
        self.n = 0;
        if Instant::now() < self.due {
            return Ok(());
        }
        self.report(t, done)
    }

    /// The run is over: report once more, whenever the last report was.
    pub fn end(&mut self, t: f64, done: u64) -> Result<(), Stopped> {
        self.report(t, done)
    }

    fn report(&mut self, t: f64, done: u64) -> Result<(), Stopped> {
        let go_on = (self.hook)(t, done);
        // from the end of the hook's call, so that a slow hook cannot take the whole run
        self.due = Instant::now() + self.period;
        if go_on {
            Ok(())
        } else {
            Err(Stopped)
        }
    }
}
