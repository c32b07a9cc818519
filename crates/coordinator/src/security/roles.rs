//! Roles and what they satisfy (coord/v1 contract): READ reads, WRITE mutates and reads, MEMBER sends
//! heartbeats only, and the contract's aliases ADMIN (everything) and MONITOR (reads only). DATA_READ (rsc's
//! own, issue #32 finding 13) reads record payloads (the message browser and Grafana's message rows), which
//! READ, WRITE and MONITOR do not: those see the coordination state, not the data.

use crate::security::access::Access;
use std::collections::BTreeSet;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    Admin,
    DataRead,
    Member,
    Monitor,
    Read,
    Write,
}

impl Role {
    pub const ALL: [Role; 6] = [
        Role::Admin,
        Role::DataRead,
        Role::Member,
        Role::Monitor,
        Role::Read,
        Role::Write,
    ];

    /// Parses a role name (case-insensitive).
    pub fn parse(name: &str) -> Option<Role> {
        match name.trim().to_ascii_uppercase().as_str() {
            "ADMIN" => Some(Role::Admin),
            "DATA_READ" => Some(Role::DataRead),
            "MEMBER" => Some(Role::Member),
            "MONITOR" => Some(Role::Monitor),
            "READ" => Some(Role::Read),
            "WRITE" => Some(Role::Write),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "ADMIN",
            Role::DataRead => "DATA_READ",
            Role::Member => "MEMBER",
            Role::Monitor => "MONITOR",
            Role::Read => "READ",
            Role::Write => "WRITE",
        }
    }
}

/// A principal's set of roles.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Roles(pub BTreeSet<Role>);

impl Roles {
    /// Parses role names; unknown names are rejected by configuration validation before this runs.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Roles {
        Roles(
            names
                .iter()
                .filter_map(|n| Role::parse(n.as_ref()))
                .collect(),
        )
    }

    pub fn all() -> Roles {
        Roles(Role::ALL.into_iter().collect())
    }

    pub fn contains(&self, r: Role) -> bool {
        self.0.contains(&r)
    }

    /// Role names sorted alphabetically, as the login and session responses show them.
    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|r| r.as_str()).collect()
    }

    /// Whether these roles grant `access` (Public and Authenticated need no particular role).
    pub fn satisfies(&self, access: Access) -> bool {
        let any = |rs: &[Role]| rs.iter().any(|r| self.contains(*r));
        match access {
            Access::Public | Access::Authenticated => true,
            Access::Read => any(&[Role::Read, Role::Write, Role::Monitor, Role::Admin]),
            Access::Write => any(&[Role::Write, Role::Admin]),
            Access::Member => any(&[Role::Member, Role::Admin]),
            Access::DataRead => any(&[Role::DataRead, Role::Admin]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_satisfy_what_the_contract_says() {
        let r = |n: &[&str]| Roles::from_names(n);
        let table = [
            (r(&["READ"]), [true, false, false, false]),
            (r(&["MONITOR"]), [true, false, false, false]),
            (r(&["WRITE"]), [true, true, false, false]),
            (r(&["MEMBER"]), [false, false, true, false]),
            (r(&["DATA_READ"]), [false, false, false, true]),
            (r(&["ADMIN"]), [true, true, true, true]),
        ];
        for (roles, [read, write, member, data]) in table {
            assert_eq!(roles.satisfies(Access::Read), read, "{roles:?} READ");
            assert_eq!(roles.satisfies(Access::Write), write, "{roles:?} WRITE");
            assert_eq!(roles.satisfies(Access::Member), member, "{roles:?} MEMBER");
            assert_eq!(
                roles.satisfies(Access::DataRead),
                data,
                "{roles:?} DATA_READ"
            );
        }
        assert_eq!(
            Roles::all().names(),
            ["ADMIN", "DATA_READ", "MEMBER", "MONITOR", "READ", "WRITE"]
        );
    }
}
