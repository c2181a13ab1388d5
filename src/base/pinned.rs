//! A value pinned in a box made for it first.

use std::pin::Pin;

/// `Box::pin(value)`, with the box allocated before `value` is made, so that the compiler can
/// build it there: `Box::pin` made a request's future on the stack and copied it into its
/// box (2.3 KiB for the pipeline's; callgrind: ~230 instructions a request for its two
/// boxes).
pub fn boxed<T>(value: T) -> Pin<Box<T>> {
    Box::into_pin(Box::write(Box::new_uninit(), value))
}
