//! This project's own format's protocols above its frames: the `.lcindex` hint beside each segment (`hint`),
//! its directory layout ([`layout`]), recovery (`open`), its side of the cleaner's swap (`commit`), `check` and
//! `repair`.

pub(crate) mod check;
pub(crate) mod commit;
pub(crate) mod hint;
pub mod layout;
pub(crate) mod open;
pub(crate) mod repair;
