//! A value built in a box made for it first (pinned, or not).

use std::pin::Pin;

/// `Box::pin(make())`, built where [`in_box`] builds.
#[inline]
pub fn boxed<T>(make: impl FnOnce() -> T) -> Pin<Box<T>> {
    Box::into_pin(in_box(make))
}

/// `Box::new(make())`, the box allocated first and `make` called in this function's own
/// frame, where the compiler builds the value straight into the box. `Box::new(value)`
/// builds it on the caller's stack and copies it, and so does this function when inlined
/// into a larger one, hence `inline(never)`.
#[inline(never)]
pub fn in_box<T>(make: impl FnOnce() -> T) -> Box<T> {
    Box::write(Box::new_uninit(), make())
}
