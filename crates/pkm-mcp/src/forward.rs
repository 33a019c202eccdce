//! The follower's side: forwards a call to the process leading the vault over its channel
//! (`channel.rs`) and reads the answer (`wire.rs`), telling a call that never reached a leader from
//! one whose leader went away mid-call, so `Host` knows what it may send again.

use std::io::BufReader;

use parking_lot::Mutex;
use pkm_core::{KbError, KbResult};
use serde_json::Value;

use crate::channel::{self, Address, Conn};
use crate::wire::{Envelope, Reply, Request, VERSION, read_line, write_line};

/// Idle connections a follower keeps to its leader.
const MAX_IDLE_CONNECTIONS: usize = 8;

/// Why a forwarded call has no answer.
pub(crate) enum Lost {
    /// Nothing reached a leader (none listens yet, or the connection was refused).
    Unsent,
    /// The request was sent and the leader went away before answering.
    InFlight,
}

/// A follower's connections to its leader.
pub(crate) struct Client {
    address: Address,
    idle: Mutex<Vec<BufReader<Conn>>>,
}

impl Client {
    pub(crate) fn new(address: Address) -> Client {
        Client {
            address,
            idle: Mutex::new(Vec::new()),
        }
    }

    fn connect(&self) -> Option<BufReader<Conn>> {
        channel::connect(&self.address).ok().map(BufReader::new)
    }

    /// Sends `request` to the leader and waits for its answer, passing progress lines on.
    pub(crate) fn call(
        &self,
        request: &Request,
        progress: &(dyn Fn(usize, usize) + Send + Sync),
    ) -> Result<KbResult<Value>, Lost> {
        let envelope = Envelope {
            version: VERSION.to_owned(),
            request: request.clone(),
        };
        // A pooled connection may be to a leader that has since exited: then try a fresh one,
        // which tells "nobody listens" (unsent) from "died while answering" (in flight).
        let pooled = self.idle.lock().pop();
        let mut conn = match pooled {
            Some(c) => c,
            None => self.connect().ok_or(Lost::Unsent)?,
        };
        if write_line(conn.get_mut(), &envelope).is_err() {
            self.idle.lock().clear();
            conn = self.connect().ok_or(Lost::Unsent)?;
            write_line(conn.get_mut(), &envelope).map_err(|_| Lost::Unsent)?;
        }
        loop {
            let Some(line) = read_line(&mut conn) else {
                self.idle.lock().clear();
                return Err(Lost::InFlight);
            };
            match serde_json::from_str::<Reply>(&line) {
                Ok(Reply::Progress(d, t)) => progress(d, t),
                Ok(done) => {
                    let mut idle = self.idle.lock();
                    if idle.len() < MAX_IDLE_CONNECTIONS {
                        idle.push(conn);
                    }
                    return Ok(match done {
                        Reply::Ok(v) => Ok(v),
                        Reply::Err(e) => Err(e.into()),
                        Reply::Progress(..) => Err(KbError::internal("unexpected progress")),
                    });
                }
                Err(e) => {
                    tracing::error!(error = %e, "the leading process sent a line this one cannot read");
                    return Ok(Err(KbError::internal(
                        "an unreadable answer from the leading process",
                    )));
                }
            }
        }
    }
}
