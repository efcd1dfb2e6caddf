//! The JSON decision format shared by `rebound eval` and `rebound serve`.

pub mod hedge;
#[cfg(test)]
mod hostile_numbers;
pub mod input;
pub mod outcome;
pub mod output;
