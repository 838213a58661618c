//! The few messages of Perfetto's trace format (perfetto_trace.proto) that a
//! wakeup trace needs, encoded with prost: tracks (one per CPU, per task, per
//! LLC counter), instant and slice events with debug annotations, and
//! counter values. The field numbers are the format's; the test that opens
//! a trace checks them against Perfetto's own schema (its Python package's
//! perfetto_trace_pb2).
//!
//! Declared here rather than taken from a crate of generated bindings:
//! those generate the whole of Perfetto's schema, hundreds of messages, at
//! build time, for the six used here.

use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub struct Trace {
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    /// SEQ_INCREMENTAL_STATE_CLEARED (1) on a sequence's first packet.
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
    #[prost(string, optional, tag = "14")]
    pub description: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct CounterDescriptor {
    #[prost(string, optional, tag = "6")]
    pub unit_name: Option<String>,
}

/// TrackEvent.Type.
pub const TYPE_SLICE_BEGIN: i32 = 1;
pub const TYPE_SLICE_END: i32 = 2;
pub const TYPE_INSTANT: i32 = 3;
pub const TYPE_COUNTER: i32 = 4;

#[derive(Clone, PartialEq, Message)]
pub struct TrackEvent {
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(string, repeated, tag = "22")]
    pub categories: Vec<String>,
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
    #[prost(double, optional, tag = "44")]
    pub double_counter_value: Option<f64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct DebugAnnotation {
    #[prost(int64, optional, tag = "4")]
    pub int_value: Option<i64>,
    #[prost(double, optional, tag = "5")]
    pub double_value: Option<f64>,
    #[prost(string, optional, tag = "6")]
    pub string_value: Option<String>,
    #[prost(string, optional, tag = "10")]
    pub name: Option<String>,
}

impl DebugAnnotation {
    pub fn int(name: &str, v: i64) -> Self {
        DebugAnnotation {
            name: Some(name.into()),
            int_value: Some(v),
            ..Default::default()
        }
    }

    pub fn double(name: &str, v: f64) -> Self {
        DebugAnnotation {
            name: Some(name.into()),
            double_value: Some(v),
            ..Default::default()
        }
    }

    pub fn text(name: &str, v: &str) -> Self {
        DebugAnnotation {
            name: Some(name.into()),
            string_value: Some(v.into()),
            ..Default::default()
        }
    }
}

/// A trace being built: every packet on one sequence.
#[derive(Default)]
pub struct Builder {
    trace: Trace,
}

impl Builder {
    const SEQUENCE: u32 = 1;

    fn push(&mut self, mut p: TracePacket) {
        p.trusted_packet_sequence_id = Some(Self::SEQUENCE);
        if self.trace.packet.is_empty() {
            p.sequence_flags = Some(1);
        }
        self.trace.packet.push(p);
    }

    /// A track; @counter_unit makes it a counter track.
    pub fn track(
        &mut self,
        uuid: u64,
        name: &str,
        parent: Option<u64>,
        counter_unit: Option<&str>,
    ) {
        self.push(TracePacket {
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(uuid),
                name: Some(name.into()),
                parent_uuid: parent,
                counter: counter_unit.map(|u| CounterDescriptor {
                    unit_name: Some(u.into()),
                }),
                description: None,
            }),
            ..Default::default()
        });
    }

    /// An event of @kind (TYPE_*) on @track at @ts.
    pub fn event(
        &mut self,
        ts: u64,
        track: u64,
        kind: i32,
        name: Option<&str>,
        args: Vec<DebugAnnotation>,
    ) {
        self.push(TracePacket {
            timestamp: Some(ts),
            track_event: Some(TrackEvent {
                r#type: Some(kind),
                track_uuid: Some(track),
                name: name.map(String::from),
                debug_annotations: args,
                categories: vec!["sched".into()],
                double_counter_value: None,
            }),
            ..Default::default()
        });
    }

    /// A counter's value on @track at @ts.
    pub fn counter(&mut self, ts: u64, track: u64, value: f64) {
        self.push(TracePacket {
            timestamp: Some(ts),
            track_event: Some(TrackEvent {
                r#type: Some(TYPE_COUNTER),
                track_uuid: Some(track),
                double_counter_value: Some(value),
                ..Default::default()
            }),
            ..Default::default()
        });
    }

    pub fn packets(&self) -> usize {
        self.trace.packet.len()
    }

    pub fn encode(&self) -> Vec<u8> {
        self.trace.encode_to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_encodes_and_decodes_back() {
        let mut b = Builder::default();
        b.track(1, "CPU 0", None, None);
        b.track(2, "LLC 0 util %", None, Some("%"));
        b.event(
            1000,
            1,
            TYPE_INSTANT,
            Some("found"),
            vec![DebugAnnotation::int("wait_us", 3)],
        );
        b.counter(1000, 2, 42.5);
        let bytes = b.encode();
        let t = Trace::decode(bytes.as_slice()).unwrap();
        assert_eq!(t.packet.len(), 4);
        assert_eq!(
            t.packet[0].sequence_flags,
            Some(1),
            "the first packet clears the state"
        );
        assert!(t
            .packet
            .iter()
            .all(|p| p.trusted_packet_sequence_id == Some(1)));
        assert_eq!(
            t.packet[3]
                .track_event
                .as_ref()
                .unwrap()
                .double_counter_value,
            Some(42.5)
        );
    }
}
