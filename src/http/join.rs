//! Several futures driven at once on the request's own task, outputs in order: the `n`
//! choices of a request, the prompts of a batch, the upstreams `/readyz` probes. No task is
//! spawned, so dropping the request drops (and cancels) every one of them.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::Poll;

/// Runs futures concurrently and returns their outputs in order (the `n` choices of a
/// request, the prompts of a batch).
pub async fn join_all<'a, T>(futures: Vec<Pin<Box<dyn Future<Output = T> + Send + 'a>>>) -> Vec<T> {
    let mut futures: Vec<_> = futures.into_iter().map(Some).collect();
    let mut outputs: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    poll_fn(|cx| {
        let mut pending = false;
        for (slot, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if let Some(future) = slot {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => {
                        *output = Some(value);
                        *slot = None;
                    }
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}
