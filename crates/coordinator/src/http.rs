//! The HTTP edge: the router built from the route table and every handler ([`api`]), the bounded accept
//! loop ([`http_server`]), the HTTP shape of a failure ([`error`]), the contract's response shapes
//! ([`views`]) and the embedded web console ([`console`]). Domain errors become HTTP answers only here.

pub mod api;
pub mod console;
pub mod error;
pub mod http_server;
pub mod views;
