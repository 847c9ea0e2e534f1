package keyring

import (
	"encoding/base64"
	"encoding/binary"
)

// BindingContext returns ad, the binding a Wrapper is given, as a KMS encryption
// context (AWS KMS takes string pairs, which it authenticates and writes to
// CloudTrail). The binding of a data key becomes its parts by name: purpose,
// project, stream, epoch and keyId, so the KMS's audit log names the project and
// stream of every unwrap. Any other ad is carried whole, in base64, under "ad". Either
// way the context is a function of ad alone and distinct ad give distinct contexts.
func BindingContext(ad []byte) map[string]string {
	f, ok := splitLengthPrefixed(ad)
	if ok && len(f) == 5 && f[0] == dataKeyPurpose {
		return map[string]string{"purpose": f[0], "project": f[1], "stream": f[2], "epoch": f[3], "keyId": f[4]}
	}
	return map[string]string{"ad": base64.StdEncoding.EncodeToString(ad)}
}

// splitLengthPrefixed inverts lengthPrefixed; ok is false unless data is exactly a
// sequence of length-prefixed fields.
func splitLengthPrefixed(data []byte) (fields []string, ok bool) {
	for len(data) > 0 {
		if len(data) < 4 {
			return nil, false
		}
		n := binary.BigEndian.Uint32(data)
		data = data[4:]
		if uint64(n) > uint64(len(data)) {
			return nil, false
		}
		fields = append(fields, string(data[:n]))
		data = data[n:]
	}
	return fields, true
}
