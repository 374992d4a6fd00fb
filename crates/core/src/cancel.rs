//! Cancellation: a token the caller creates and passes down. Whoever owns the token (the CLI's
//! signal handler, a fleet controller, a test) cancels it; the code it was passed to only looks.
//! Code that must stop its own workers for its own reasons (an I/O error) uses a token of its
//! own, made with [`Cancel::child`], so it never writes into the caller's.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A cancellation token: cheap to clone, shared by every clone.
#[derive(Clone, Debug, Default)]
pub struct Cancel {
    own: Arc<AtomicBool>,
    parent: Option<Arc<AtomicBool>>,
}

impl Cancel {
    /// A token nobody has cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// A token over an existing flag (a signal handler's).
    pub fn from_flag(flag: Arc<AtomicBool>) -> Cancel {
        Cancel {
            own: flag,
            parent: None,
        }
    }

    /// Asks everything holding this token (and its children) to stop.
    pub fn cancel(&self) {
        self.own.store(true, Ordering::SeqCst);
    }

    /// Whether this token or the one it was made from was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.own.load(Ordering::Relaxed)
            || self
                .parent
                .as_ref()
                .is_some_and(|p| p.load(Ordering::Relaxed))
    }

    /// A token cancelled when this one is, which can also be cancelled on its own without
    /// cancelling this one (one level deep: a child of a child sees only its parent).
    pub fn child(&self) -> Cancel {
        Cancel {
            own: Arc::new(AtomicBool::new(false)),
            parent: Some(Arc::clone(&self.own)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_sees_its_parent_but_not_the_other_way() {
        let parent = Cancel::new();
        let child = parent.child();
        child.cancel();
        assert!(child.is_cancelled());
        assert!(!parent.is_cancelled());
        let child2 = parent.child();
        parent.cancel();
        assert!(child2.is_cancelled());
    }
}
