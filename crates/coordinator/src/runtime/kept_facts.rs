//! The invariant facts kept beside one cached revision of a group (`rsc_group::invariants::Facts`), for the
//! write that replaces that revision to update in place.
//!
//! Counting the facts walks the group; updating them follows what a write changed, but changes them: they stop
//! being the facts of the revision they were kept with. So they are kept in a cell that the write replacing
//! the revision takes them out of ([`KeptFacts::take`]), and only once that write is in Redis
//! (`Coordinator::commit_with_progress`, on `Written`): a write that is refused (a conflict, a failed lease
//! condition) or fails never touches them, and facts that were taken are never put back. Whatever is in a
//! cell is therefore the facts of exactly the aggregate it is cached with; a write that finds the cell empty
//! (a second write decided on the same revision, which Redis refuses anyway, or a revision loaded from Redis)
//! counts afresh. Debug builds check every update against facts counted afresh.

use rsc_group::batch::LiveMembers;
use rsc_group::invariants::Facts;
use rsc_group::model::Group;
use std::sync::{Arc, Mutex};

/// The facts of one cached aggregate, until the write that replaces it takes them.
#[derive(Debug, Default)]
pub struct KeptFacts(Mutex<Option<Facts>>);

impl KeptFacts {
    /// A cell holding `facts`, which must be the facts of the aggregate it is cached with.
    pub fn of(facts: Facts) -> Arc<Self> {
        Arc::new(KeptFacts(Mutex::new(Some(facts))))
    }

    /// The facts, taken out (the cell is empty afterwards): for the one write, already in Redis, that replaces
    /// the aggregate they are of.
    pub fn take(&self) -> Option<Facts> {
        self.0.lock().ok()?.take()
    }

    /// The live members of the aggregate, in all and for each of `principals`, read from the facts while they
    /// are kept (None once taken): what the member caps count, without walking the group.
    pub fn live_members<'p>(
        &self,
        principals: impl IntoIterator<Item = &'p str>,
    ) -> Option<LiveMembers> {
        let kept = self.0.lock().ok()?;
        let facts = kept.as_ref()?;
        Some(LiveMembers {
            all: facts.live_members(),
            by_principal: principals
                .into_iter()
                .map(|p| (p.to_owned(), facts.live_members_of(p)))
                .collect(),
        })
    }

    /// Whether the cell is empty or holds exactly the facts of `g` (counted afresh to compare: for tests).
    pub fn are_of(&self, g: &Group) -> bool {
        self.0
            .lock()
            .map(|f| f.as_ref().is_none_or(|f| *f == Facts::of(g)))
            .unwrap_or(false)
    }

    /// Whether the cell still holds facts.
    pub fn is_kept(&self) -> bool {
        self.0.lock().map(|f| f.is_some()).unwrap_or(false)
    }
}
