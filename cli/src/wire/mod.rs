//! The JSON decision format shared by `rebound eval` and `rebound serve`.

mod failure;
pub mod hedge;
pub mod input;
mod input_error;
pub mod outcome;
pub mod output;
