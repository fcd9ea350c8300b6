//! Views render State the way the real tools do (EOS `show`, Linux `ip`, iputils `ping`,
//! `tracepath`, `traceroute`). Views format; they never compute routing.

pub mod eos;
pub mod linux;
