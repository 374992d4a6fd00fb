//! Clock-offset estimation between the controller and an agent (Cristian's method).
//!
//! The controller notes its clock when it sends a probe (`t0`) and when the reply arrives
//! (`t1`); the agent answers with its clock (`ta`). If the two legs took equally long, the
//! agent's clock was `ta` at the controller's `(t0 + t1) / 2`, so the offset is
//! `ta - (t0 + t1) / 2`. Unequal legs make an error of at most half the round trip, so of
//! several probes the one with the shortest round trip is kept, and that half round trip is
//! reported beside the offset as its uncertainty. Queueing delay (netem jitter, a busy SSH
//! multiplexer) only lengthens round trips, and the shortest one is the least disturbed.

use crate::protocol::{now_ns, send, Message, ReadError, Reader};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};

/// Probes per host: enough that at least one round trip is rarely delayed by jitter.
pub const PROBES: u32 = 8;

/// One probe, in ns since 1970 of each side's CLOCK_REALTIME.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Controller's clock when the probe was sent.
    pub sent_ns: i64,
    /// Agent's clock when it answered.
    pub agent_ns: i64,
    /// Controller's clock when the answer arrived.
    pub received_ns: i64,
}

/// The estimate kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// Agent's clock minus the controller's, ns.
    pub offset_ns: i64,
    /// Round trip of the probe it comes from, ns; the offset is within ± half of it.
    pub rtt_ns: i64,
    /// Probes taken.
    pub probes: u32,
}

impl ClockOffset {
    /// An instant of the controller's clock in the agent's clock.
    pub fn to_agent(&self, controller_ns: i64) -> i64 {
        controller_ns.saturating_add(self.offset_ns)
    }

    /// An instant of the agent's clock in the controller's clock.
    pub fn to_controller(&self, agent_ns: i64) -> i64 {
        agent_ns.saturating_sub(self.offset_ns)
    }
}

/// The estimate from the probe with the shortest round trip (None without a usable probe).
pub fn estimate(samples: &[Sample]) -> Option<ClockOffset> {
    let best = samples
        .iter()
        .filter(|s| s.received_ns >= s.sent_ns)
        .min_by_key(|s| s.received_ns - s.sent_ns)?;
    let mid = best.sent_ns + (best.received_ns - best.sent_ns) / 2;
    Some(ClockOffset {
        offset_ns: best.agent_ns - mid,
        rtt_ns: best.received_ns - best.sent_ns,
        probes: samples.len() as u32,
    })
}

/// Why probing failed.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The pipe failed or closed.
    #[error("clock probe: {0}")]
    Read(#[from] ReadError),
    /// Writing failed.
    #[error("clock probe: {0}")]
    Write(#[from] std::io::Error),
    /// The peer answered something else.
    #[error("clock probe: expected a time_reply to probe {seq}, got {got}")]
    Unexpected {
        /// The probe.
        seq: u32,
        /// What came.
        got: String,
    },
    /// The peer closed the pipe.
    #[error("clock probe: the agent closed the connection")]
    Closed,
}

/// Probes an agent over one pipe, one probe at a time, and keeps the best.
pub fn measure<W: Write, R: BufRead>(
    w: &mut W,
    r: &mut Reader<R>,
    probes: u32,
) -> Result<ClockOffset, ProbeError> {
    let mut samples = Vec::with_capacity(probes as usize);
    for seq in 0..probes {
        let sent_ns = now_ns();
        send(w, &Message::Time { seq })?;
        match r.next_message()? {
            Some(Message::TimeReply { seq: s, agent_ns }) if s == seq => samples.push(Sample {
                sent_ns,
                agent_ns,
                received_ns: now_ns(),
            }),
            Some(other) => {
                return Err(ProbeError::Unexpected {
                    seq,
                    got: format!("{other:?}").chars().take(80).collect(),
                })
            }
            None => return Err(ProbeError::Closed),
        }
    }
    estimate(&samples).ok_or(ProbeError::Closed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;
    use std::time::Duration;

    #[test]
    fn the_shortest_round_trip_wins() {
        let s = |sent, agent, recv| Sample {
            sent_ns: sent,
            agent_ns: agent,
            received_ns: recv,
        };
        // True offset +1000; the first probe's reply leg was delayed by 800.
        let e = estimate(&[s(0, 1100, 1000), s(2000, 3050, 2100)]).unwrap();
        assert_eq!(e.offset_ns, 1000);
        assert_eq!(e.rtt_ns, 100);
        assert_eq!(e.to_agent(5), 1005);
        assert_eq!(e.to_controller(1005), 5);
        assert!(estimate(&[]).is_none());
    }

    /// A fake agent behind a real pipe: its clock runs `offset` ahead, each leg is delayed
    /// by `base` plus jitter, and some probes are held back much longer (a queue).
    #[test]
    fn offset_over_a_pipe_with_injected_delay_is_within_half_the_best_round_trip() {
        let offset: i64 = 3_600_000_000_123; // an hour and a bit ahead
        let (to_agent_r, mut to_agent_w) = std::io::pipe().unwrap();
        let (from_agent_r, from_agent_w) = std::io::pipe().unwrap();
        let agent = std::thread::spawn(move || {
            let mut r = Reader::new(BufReader::new(to_agent_r));
            let mut w = from_agent_w;
            let mut rng = fastrand_like(7);
            while let Ok(Some(Message::Time { seq })) = r.next_message() {
                // Outbound leg: 2 ms plus up to 3 ms of jitter; every third probe 20 ms more.
                let out = 2_000 + rng() % 3_000 + if seq % 3 == 0 { 20_000 } else { 0 };
                std::thread::sleep(Duration::from_micros(out));
                let agent_ns = now_ns() + offset;
                let back = 2_000 + rng() % 3_000;
                std::thread::sleep(Duration::from_micros(back));
                if send(&mut w, &Message::TimeReply { seq, agent_ns }).is_err() {
                    break;
                }
            }
        });
        let mut r = Reader::new(BufReader::new(from_agent_r));
        let e = measure(&mut to_agent_w, &mut r, PROBES).unwrap();
        drop(to_agent_w);
        agent.join().unwrap();
        let err = (e.offset_ns - offset).abs();
        assert!(
            e.rtt_ns >= 4_000_000,
            "a round trip cannot beat the injected 4 ms: {e:?}"
        );
        assert!(
            e.rtt_ns < 24_000_000,
            "the delayed probes were not kept: {e:?}"
        );
        assert!(
            err <= e.rtt_ns / 2,
            "error {err} ns beyond half the round trip: {e:?}"
        );
        // Legs differ by at most the 3 ms jitter (plus scheduling): the estimate is that good.
        assert!(err < 4_000_000, "error {err} ns: {e:?}");
        assert_eq!(e.probes, PROBES);
    }

    /// A small deterministic generator (xorshift) so the test needs no random crate.
    fn fastrand_like(mut s: u64) -> impl FnMut() -> u64 {
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    #[test]
    fn a_wrong_answer_is_named() {
        let mut out = Vec::new();
        let input = b"{\"msg\":\"ready\",\"targets\":[]}\n".to_vec();
        let mut r = Reader::new(input.as_slice());
        let e = measure(&mut out, &mut r, 2).unwrap_err().to_string();
        assert!(e.contains("expected a time_reply to probe 0"), "{e}");
        let mut r = Reader::new(&b""[..]);
        assert!(matches!(
            measure(&mut Vec::new(), &mut r, 2),
            Err(ProbeError::Closed)
        ));
    }
}
