//! Floorplan inference, its ground-truth accuracy and affinity advice: the record types.
