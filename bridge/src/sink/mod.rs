//! Where a turn's events go: one [`Pipeline`] from a session's event sink to the stages that show
//! or stream them (a person's view, the host's event stream) and to the transcript mirror with its
//! store (a JSONL file, the host's transcript), used alike by `clawbridge run`, `serve` and the
//! benchmarks. Between the sink and the stages sits the [`EventQueue`], bounded in bytes: while
//! it is full the turn reads no further native line.

mod pipeline;
pub mod queue;

pub use pipeline::{
    EventStage, FLUSH_DEADLINE, GatedSink, MAX_HELD_ROW_BYTES, MAX_HELD_ROWS, MirrorSpec, Mirrored, Pipeline,
    PipelineSender, StoreError, TranscriptStore,
};
pub use queue::{EventQueue, MAX_QUEUED_BYTES};
