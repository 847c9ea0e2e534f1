package tlog

import (
	"crypto/ed25519"
	"fmt"
	"strings"
)

// The markers around a digest's signed note in the email text.
const (
	digestBegin = "-----BEGIN SEALTRAIL DIGEST-----\n"
	digestEnd   = "-----END SEALTRAIL DIGEST-----\n"
)

// DigestText is the text of the digest email: the facts of d written for people, then
// the signed note signed (from SignDigest) between markers. It is a function of the
// note alone, so VerifyDigestText can rebuild it and see any edit.
func DigestText(d *Digest, signed []byte) string {
	var b strings.Builder
	line := func(f string, args ...any) { fmt.Fprintf(&b, f+"\n", args...) }
	line("Sealtrail digest of project %q (%s)", d.Name, d.ProjectID)
	line("Period: %s, issued %s", d.Period, d.Issued)
	if d.Previous == "" {
		line("This is the project's first digest. Since the project began:")
	} else {
		line("Since the previous digest (%s):", d.Previous)
	}
	for _, c := range d.Counts {
		line("  %-14s %d added", c.Stream+":", c.Count)
	}
	line("")
	line("Signed tree heads")
	for _, h := range d.Heads {
		line("  %-14s size %d, root %s, at %s", h.Stream+":", h.TreeSize, h.RootHash, h.Timestamp)
	}
	line("")
	line("Latest anchored roots")
	for _, a := range d.Anchors {
		if a.Type == "" {
			line("  %-14s not yet anchored", a.Stream+":")
			continue
		}
		line("  %-14s size %d, root %s, anchored %s in %s %q", a.Stream+":", a.TreeSize, a.RootHash, a.AnchoredAt, a.Type, a.Ref)
	}
	line("")
	line("Active legal holds")
	if len(d.Holds) == 0 {
		line("  none")
	}
	for _, h := range d.Holds {
		line("  %s: membership root %s, %d events, since %s", h.ID, h.MembershipRoot, h.Events, h.CreatedAt)
	}
	line("")
	line("Check this digest offline: save the email as a file and run")
	line("  sealtrail verify digest --file <file.eml> --service-key <the service's public key>")
	line("It checks the service's signature on the facts below and that the text above")
	line("is exactly what they say.")
	line("")
	b.WriteString(digestBegin)
	b.Write(signed)
	b.WriteString(digestEnd)
	return b.String()
}

// VerifyDigestText checks the text of a digest email under the service key pub: the
// signed note between the markers must verify (ErrBadSignature otherwise), and the
// whole text must be exactly DigestText of it (ErrDigestEdited otherwise). Line ends
// may be CRLF, as mail transports them; text without markers is ErrDigestMalformed.
func VerifyDigestText(pub ed25519.PublicKey, text string) (Digest, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	start := strings.Index(text, digestBegin)
	end := strings.LastIndex(text, digestEnd)
	if start < 0 || end < start {
		return Digest{}, fmt.Errorf("%w: no signed digest between %q and %q", ErrDigestMalformed,
			strings.TrimSpace(digestBegin), strings.TrimSpace(digestEnd))
	}
	signed := text[start+len(digestBegin) : end]
	d, err := OpenDigest(pub, []byte(signed))
	if err != nil {
		return d, err
	}
	if want := DigestText(&d, []byte(signed)); strings.TrimRight(text, "\n") != strings.TrimRight(want, "\n") {
		return d, fmt.Errorf("%w: %s", ErrDigestEdited, firstDifference(want, text))
	}
	return d, nil
}

// firstDifference names the first line where got differs from want.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d is %q, the signed facts say %q", i+1, gl, wl)
		}
	}
	return "trailing text"
}
