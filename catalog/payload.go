package catalog

// PayloadColumns returns the values of a batch row's payload_object, payload_offset
// and payload_length columns for b: NULLs (nil) when the batch has its own payload
// object, the segment of the tick's group object otherwise. Both drivers use it.
func PayloadColumns(b *SealBatch) (object *string, offset, length *int64) {
	if b.Object == "" {
		return nil, nil, nil
	}
	o, off, n := b.Object, int64(b.Offset), int64(b.Length)
	return &o, &off, &n
}

// SetPayloadColumns sets b's Object, Offset and Length from the nullable columns
// of its row (the inverse of PayloadColumns); NULL, or a negative value no driver
// writes, leaves them unset.
func (b *Batch) SetPayloadColumns(object *string, offset, length *int64) {
	if object == nil || offset == nil || length == nil || *offset < 0 || *length <= 0 {
		return
	}
	b.Object, b.Offset, b.Length = *object, uint64(*offset), uint64(*length)
}
