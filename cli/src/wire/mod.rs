//! The JSON decision format shared by `rebound eval` and `rebound serve`.

pub mod hedge;
pub mod input;
pub mod outcome;
pub mod output;
