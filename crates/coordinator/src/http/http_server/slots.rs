//! Connection slots of one listener: at most `coordinator.http.max-connections` in all, at most
//! `coordinator.http.max-connections-per-address` from one client address, and the last tenth of the slots
//! (the reserve) only for addresses that hold fewer than [`RESERVE_SHARE`] connections. So one address
//! opening connections as fast as it can fills its own share and never the listener: `/healthz`, heartbeats
//! and operators from other addresses keep being answered (issue #32, finding 3).
//!
//! The address is the socket peer (a load balancer in front shares one address: raise the per-address cap to
//! `max-connections` there). [`admit`] is the rule, pure; [`Slots`] counts under a mutex taken once when a
//! connection opens and once when it closes, never per request.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// An address holding fewer connections than this may still take a reserved slot.
pub const RESERVE_SHARE: u32 = 8;

/// The listener's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_total: u32,
    pub per_address: u32,
}

impl Limits {
    /// Slots kept for addresses holding fewer than [`RESERVE_SHARE`] connections: a tenth of the total.
    pub fn reserve(&self) -> u32 {
        self.max_total / 10
    }
}

/// Why a connection gets no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Every slot is taken.
    Full,
    /// This address already holds its share.
    AddressFull,
    /// Only the reserve is left, and this address already holds [`RESERVE_SHARE`] or more.
    ReserveOnly,
}

/// Whether a new connection from an address that holds `held` may open while `total` are open.
pub fn admit(limits: Limits, total: u32, held: u32) -> Result<(), Refused> {
    if total >= limits.max_total {
        return Err(Refused::Full);
    }
    if held >= limits.per_address {
        return Err(Refused::AddressFull);
    }
    if total >= limits.max_total - limits.reserve() && held >= RESERVE_SHARE {
        return Err(Refused::ReserveOnly);
    }
    Ok(())
}

/// The open connections of one listener, per address.
pub struct Slots {
    limits: Limits,
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    total: u32,
    by_address: HashMap<IpAddr, u32>,
}

/// One connection's slot, given back when dropped.
pub struct Slot {
    slots: Arc<Slots>,
    address: IpAddr,
}

impl Slots {
    pub fn new(limits: Limits) -> Arc<Slots> {
        Arc::new(Slots {
            limits,
            open: Mutex::new(Open::default()),
        })
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// A slot for a new connection from `address`, or why there is none.
    pub fn acquire(self: &Arc<Self>, address: IpAddr) -> Result<Slot, Refused> {
        let address = address.to_canonical();
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let held = open.by_address.get(&address).copied().unwrap_or(0);
        admit(self.limits, open.total, held)?;
        open.total += 1;
        *open.by_address.entry(address).or_insert(0) += 1;
        Ok(Slot {
            slots: Arc::clone(self),
            address,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(|e| e.into_inner());
        open.total = open.total.saturating_sub(1);
        if let Some(held) = open.by_address.get_mut(&self.address) {
            *held -= 1;
            if *held == 0 {
                open.by_address.remove(&self.address);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_total: 300,
        per_address: 256,
    };

    #[test]
    fn an_address_is_held_to_its_share_and_the_reserve_stays_for_others() {
        assert_eq!(admit(LIMITS, 0, 0), Ok(()));
        assert_eq!(admit(LIMITS, 255, 255), Ok(()));
        assert_eq!(admit(LIMITS, 256, 256), Err(Refused::AddressFull));
        // The reserve (the last 30): an address with a few connections gets in, a greedy one does not.
        assert_eq!(admit(LIMITS, 280, 3), Ok(()));
        assert_eq!(admit(LIMITS, 280, RESERVE_SHARE), Err(Refused::ReserveOnly));
        assert_eq!(admit(LIMITS, 300, 0), Err(Refused::Full));
    }

    #[test]
    fn slots_are_counted_per_address_and_given_back() {
        let slots = Slots::new(Limits {
            max_total: 20,
            per_address: 3,
        });
        let a: IpAddr = "127.0.0.2".parse().unwrap();
        let b: IpAddr = "::ffff:127.0.0.3".parse().unwrap();
        let held: Vec<Slot> = (0..3).map(|_| slots.acquire(a).unwrap()).collect();
        assert_eq!(slots.acquire(a).err(), Some(Refused::AddressFull));
        let other = slots.acquire(b).unwrap();
        assert_eq!(other.address, "127.0.0.3".parse::<IpAddr>().unwrap());
        drop(held);
        assert!(slots.acquire(a).is_ok());
        drop(other);
        assert_eq!(slots.open.lock().unwrap().total, 0);
        assert!(slots.open.lock().unwrap().by_address.is_empty());
    }
}
