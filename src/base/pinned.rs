//! A value built in a box made for it first (pinned, or not).

use std::pin::Pin;

/// `Box::pin(make())`, built where [`in_box`] builds.
#[inline]
pub fn boxed<T>(make: impl FnOnce() -> T) -> Pin<Box<T>> {
    Box::into_pin(in_box(make))
}

/// `Box::new(make())`, the box allocated first and `make` called in this function's own
/// frame, where the compiler builds the value straight into the box. `Box::new(value)`
/// built it on the caller's stack and copied it (the pipeline's future, 2.3 KiB then: ~250
/// instructions a request, callgrind), and so did this function when inlined into a larger
/// one, hence `inline(never)`.
#[inline(never)]
pub fn in_box<T>(make: impl FnOnce() -> T) -> Box<T> {
    Box::write(Box::new_uninit(), make())
}
