//! A set of shard indexes as bits, for the rebalance's passes over a group's shards.

use crate::model::ShardSet;

/// A set of shard indexes: bits for the indexes a group uses (below [`ShardBits::DENSE`]), a tree for any
/// beyond (never in a valid group, but an aggregate is not trusted to be small).
#[derive(Default)]
pub(super) struct ShardBits {
    bits: Vec<u64>,
    beyond: ShardSet,
}

impl ShardBits {
    pub(super) const DENSE: u32 = 1 << 20;

    /// Adds `s`; whether it was not in the set yet.
    pub(super) fn insert(&mut self, s: u32) -> bool {
        if s >= Self::DENSE {
            return self.beyond.insert(s);
        }
        let (word, bit) = ((s / 64) as usize, s % 64);
        if self.bits.len() <= word {
            self.bits.resize(word + 1, 0);
        }
        match self.bits.get_mut(word) {
            Some(w) => {
                let new = *w & (1 << bit) == 0;
                *w |= 1 << bit;
                new
            }
            None => false,
        }
    }

    /// Removes `s`.
    pub(super) fn remove(&mut self, s: u32) {
        if s >= Self::DENSE {
            self.beyond.remove(&s);
        } else if let Some(w) = self.bits.get_mut((s / 64) as usize) {
            *w &= !(1 << (s % 64));
        }
    }

    pub(super) fn contains(&self, s: u32) -> bool {
        if s >= Self::DENSE {
            return self.beyond.contains(&s);
        }
        self.bits
            .get((s / 64) as usize)
            .is_some_and(|w| w & (1 << (s % 64)) != 0)
    }

    /// `0..count` (all below [`ShardBits::DENSE`]: None otherwise).
    pub(super) fn below(count: u32) -> Option<Self> {
        if count > Self::DENSE {
            return None;
        }
        let words = count.div_ceil(64) as usize;
        let mut bits = vec![u64::MAX; words];
        if let Some(last) = bits.last_mut()
            && !count.is_multiple_of(64)
        {
            *last = (1u64 << (count % 64)) - 1;
        }
        Some(ShardBits {
            bits,
            beyond: ShardSet::new(),
        })
    }

    /// Whether every member is below [`ShardBits::DENSE`].
    pub(super) fn is_dense(&self) -> bool {
        self.beyond.is_empty()
    }

    /// How many shards the set holds.
    pub(super) fn len(&self) -> usize {
        self.bits
            .iter()
            .map(|w| w.count_ones() as usize)
            .sum::<usize>()
            + self.beyond.len()
    }

    /// The dense members of `self` not in `other`, ascending.
    pub(super) fn dense_minus<'s>(
        &'s self,
        other: &'s ShardBits,
    ) -> impl Iterator<Item = u32> + 's {
        self.bits.iter().enumerate().flat_map(move |(i, &w)| {
            let mut rest = w & !other.bits.get(i).copied().unwrap_or(0);
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros();
                rest &= rest - 1;
                u32::try_from(i * 64).ok().map(|base| base + bit)
            })
        })
    }
}
