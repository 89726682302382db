//! Concurrent writers' texts embedded together: one call to the model for a group of callers,
//! formed while the previous call runs, as the store's group commit forms its commits.
//!
//! A model embeds a batch of texts in far less time than it embeds them one call each (one
//! pass over the weights, matrix products instead of vector products), and a server answers a
//! batch in one round trip. Writers that each embed their own record's text, on their own
//! threads, would each pay a whole call; here the first caller to find no call running makes
//! one with its texts, and every caller that arrives meanwhile queues; when the call returns,
//! the next waiting caller makes one call with everything queued, and so on; up to as many
//! calls run at once as the machine has cores. A lone caller makes its call at once, with no
//! hand-off.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use mnemon_embed::{EmbedError, Embedder};

/// What one call to the embedder returns for one caller's texts.
type Answer = Result<Vec<Vec<f32>>, EmbedError>;

/// The queue of callers waiting for the embedder (see the module documentation).
pub(crate) struct Batcher {
    state: Mutex<Queue>,
    turn: Condvar,
    /// How many calls may run at once.
    parallel: usize,
}

impl Default for Batcher {
    /// As many calls at once as the machine has cores: a call to a local model leaves part of
    /// a core idle, and a server answers several at once.
    fn default() -> Self {
        Batcher::new(std::thread::available_parallelism().map_or(1, usize::from))
    }
}

#[derive(Default)]
struct Queue {
    /// Calls to the embedder under way.
    running: usize,
    /// Callers waiting for the next call: their ticket and texts.
    waiting: Vec<(u64, Vec<String>)>,
    next_ticket: u64,
    /// Answers not yet taken by their callers.
    done: HashMap<u64, Answer>,
    /// Calls made, and texts embedded by them (for the statistics).
    calls: u64,
    texts: u64,
}

impl Batcher {
    /// A batcher letting `parallel` calls run at once (at least one).
    pub(crate) fn new(parallel: usize) -> Self {
        Batcher { state: Mutex::default(), turn: Condvar::new(), parallel: parallel.max(1) }
    }

    /// The vectors of `texts` (one per text, in order), embedded by `embedder` in one call
    /// with whatever other callers' texts are waiting.
    pub(crate) fn embed(&self, embedder: &dyn Embedder, texts: &[&str]) -> Answer {
        let mut q = self.lock();
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        q.waiting.push((ticket, texts.iter().map(|t| (*t).to_string()).collect()));
        loop {
            if let Some(answer) = q.done.remove(&ticket) {
                return answer;
            }
            if q.running >= self.parallel || q.waiting.is_empty() {
                q = self.turn.wait(q).unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            // Room for a call: make one for everything waiting, ours included.
            q.running += 1;
            let group = std::mem::take(&mut q.waiting);
            drop(q);
            let answers = call(embedder, &group);
            q = self.lock();
            q.running -= 1;
            q.calls += 1;
            q.texts += group.iter().map(|(_, t)| t.len() as u64).sum::<u64>();
            q.done.extend(answers);
            self.turn.notify_all();
        }
    }

    /// `(calls, texts)`: the embedder's calls made through this batcher, and the texts they
    /// embedded.
    pub(crate) fn counts(&self) -> (u64, u64) {
        let q = self.lock();
        (q.calls, q.texts)
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn refs(texts: &[String]) -> Vec<&str> {
    texts.iter().map(String::as_str).collect()
}

/// One call for the whole group; if it fails, one call per caller, so that one caller's text
/// the embedder refuses does not cost the others their vectors. A panic in the embedder is an
/// error for the callers, never a queue left waiting forever.
fn call(embedder: &dyn Embedder, group: &[(u64, Vec<String>)]) -> Vec<(u64, Answer)> {
    let run = |texts: &[&str]| -> Answer {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| embedder.embed(texts))).unwrap_or_else(|p| {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(EmbedError::Config(format!("the embedder panicked: {what}")))
        })
    };
    if let [(ticket, texts)] = group {
        return vec![(*ticket, run(&refs(texts)))];
    }
    let all: Vec<&str> = group.iter().flat_map(|(_, t)| t.iter().map(String::as_str)).collect();
    match run(&all) {
        Ok(vectors) if vectors.len() == all.len() => {
            let mut vectors = vectors.into_iter();
            group.iter().map(|(ticket, t)| (*ticket, Ok(vectors.by_ref().take(t.len()).collect()))).collect()
        }
        _ => group.iter().map(|(ticket, t)| (*ticket, run(&refs(t)))).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// An embedder that takes `pause` per call, counts its calls, and refuses a text "bad".
    struct Slow {
        calls: AtomicUsize,
        pause: std::time::Duration,
    }

    impl Embedder for Slow {
        fn model_id(&self) -> &str {
            "slow"
        }
        fn dimension(&self) -> usize {
            1
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(self.pause);
            if let Some(i) = texts.iter().position(|t| *t == "bad") {
                return Err(EmbedError::Empty { index: i });
            }
            if texts.contains(&"panic") {
                panic!("a text it cannot take");
            }
            Ok(texts.iter().map(|t| vec![t.len() as f32]).collect())
        }
    }

    /// 16 threads embedding at once share calls (far fewer than 16), and each gets its own
    /// texts' vectors, in order; a text the embedder refuses fails only its own caller, and a
    /// panic is an error, not a queue that never moves again.
    #[test]
    fn concurrent_callers_share_calls_and_get_their_own_vectors() {
        let slow = Arc::new(Slow { calls: AtomicUsize::new(0), pause: std::time::Duration::from_millis(30) });
        let batcher = Arc::new(Batcher::new(1));
        let threads: Vec<_> = (0..16)
            .map(|i| {
                let (slow, batcher) = (Arc::clone(&slow), Arc::clone(&batcher));
                std::thread::spawn(move || {
                    let texts = match i {
                        3 => vec!["bad".to_string()],
                        _ => vec!["x".repeat(i + 1), "y".repeat(2 * i + 1)],
                    };
                    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                    (i, batcher.embed(&*slow, &refs))
                })
            })
            .collect();
        for t in threads {
            let (i, answer) = t.join().unwrap();
            if i == 3 {
                assert!(answer.is_err());
            } else {
                assert_eq!(
                    answer.unwrap(),
                    vec![vec![(i + 1) as f32], vec![(2 * i + 1) as f32]],
                    "caller {i}"
                );
            }
        }
        let (calls, texts) = batcher.counts();
        assert_eq!(texts, 31);
        // One call for the first caller, one or a few for those who queued behind it, and the
        // calls each caller of the failed group makes alone.
        assert!(slow.calls.load(Ordering::SeqCst) < 16 + 3, "{}", slow.calls.load(Ordering::SeqCst));
        assert!(calls < 8, "{calls} calls for 16 callers");
        let answer = batcher.embed(&*slow, &["panic"]);
        assert!(answer.unwrap_err().to_string().contains("panicked"));
        assert_eq!(batcher.embed(&*slow, &["ok"]).unwrap(), vec![vec![2.0]]);
    }
}
