package main

import (
	"bytes"
	"encoding/hex"
	"mime/quotedprintable"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/tlog"
)

// digestEmail returns a signed digest as an .eml (quoted-printable, CRLF, as the mail
// package sends it) with editText applied to its decoded text, and the service key.
func digestEmail(t *testing.T, editText func(string) string) ([]byte, string) {
	t.Helper()
	pub, priv, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	var heads []tlog.STH
	for _, s := range []string{tlog.StreamEvents, tlog.StreamProjectAudit} {
		h := tlog.STH{V: tlog.TreeHeadVersion, ProjectID: "prj_cli", Stream: s, TreeSize: 3,
			RootHash: strings.Repeat("0a", 32), Timestamp: "2026-11-24T00:00:00.000Z"}
		if err := tlog.SignSTH(priv, &h); err != nil {
			t.Fatal(err)
		}
		heads = append(heads, h)
	}
	d := &tlog.Digest{Origin: tlog.DigestOrigin("sealtrail.test", "prj_cli"), ProjectID: "prj_cli", Name: "CLI",
		Period: "daily 2026-11-24", Issued: "2026-11-24T00:00:01.000Z", Heads: heads,
		Anchors: []tlog.DigestAnchor{{Stream: tlog.StreamEvents}, {Stream: tlog.StreamProjectAudit}},
		Counts:  []tlog.DigestCount{{Stream: tlog.StreamEvents, Count: 3}, {Stream: tlog.StreamProjectAudit, Count: 3}}}
	signed, err := tlog.SignDigest(priv, d)
	if err != nil {
		t.Fatal(err)
	}
	text := editText(tlog.DigestText(d, signed))
	var body bytes.Buffer
	qp := quotedprintable.NewWriter(&body)
	if _, err := qp.Write([]byte(strings.ReplaceAll(text, "\n", "\r\n"))); err != nil {
		t.Fatal(err)
	}
	qp.Close()
	eml := "From: sealtrail@example.com\r\nTo: a@example.com\r\nSubject: digest\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" + body.String()
	return []byte(eml), hex.EncodeToString(pub)
}

func TestCLIVerifyDigest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	eml, key := digestEmail(t, func(s string) string { return s })
	good := write("good.eml", eml)
	expect(t, sealtrail(t, nil, "verify", "digest", "--file", good, "--service-key", key), exitOK, "OK: digest signed by service key")

	edited, key2 := digestEmail(t, func(s string) string { return strings.Replace(s, "3 added", "0 added", 1) })
	expect(t, sealtrail(t, nil, "verify", "digest", "--file", write("edited.eml", edited), "--service-key", key2),
		exitTamper, "digest_text_edited")

	other, _ := digestEmail(t, func(s string) string { return s })
	expect(t, sealtrail(t, nil, "verify", "digest", "--file", write("other.eml", other), "--service-key", key),
		exitTamper, "bad_digest_signature")

	expect(t, sealtrail(t, nil, "verify", "digest", "--file", write("plain.eml", []byte("From: a@b\r\n\r\nhello\r\n")), "--service-key", key),
		exitUsage, "malformed digest")
	expect(t, sealtrail(t, nil, "verify", "digest", "--file", good), exitUsage, "--service-key")
	expect(t, sealtrail(t, nil, "verify", "digest", "--file", filepath.Join(dir, "missing"), "--service-key", key), exitUsage, "--file")
	html := write("html.eml", []byte("Content-Type: text/html\r\n\r\n<p>x</p>\r\n"))
	expect(t, sealtrail(t, nil, "verify", "digest", "--file", html, "--service-key", key), exitUsage, "text/html")
}
