package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var unsafeName = regexp.MustCompile(`[^a-z0-9]+`)

// PostgresDB creates a uniquely named, empty database on the server that
// SEALTRAIL_TEST_POSTGRES names and returns a DSN for it; the database is dropped when
// the test ends. Without the server the test skips, or fails under CI=true.
func PostgresDB(t testing.TB) string {
	t.Helper()
	admin := Require(t, "SEALTRAIL_TEST_POSTGRES", "PostgreSQL")
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatal(err)
	}
	base := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(t.Name()), "_"), "_")
	if len(base) > 40 {
		base = base[len(base)-40:]
	}
	name := "st_" + base + "_" + hex.EncodeToString(rnd[:])
	exec := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return fmt.Errorf("connect to %s: %w", redact(admin), err)
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	ident := pgx.Identifier{name}.Sanitize()
	if err := exec("CREATE DATABASE " + ident); err != nil {
		t.Fatalf("testenv: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := exec("DROP DATABASE IF EXISTS " + ident + " WITH (FORCE)"); err != nil {
			t.Errorf("testenv: drop database %s: %v", name, err)
		}
	})
	dsn, err := withDatabase(admin, name)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return dsn
}

// withDatabase returns dsn (a URL or a key=value string) naming database db instead.
func withDatabase(dsn, db string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse SEALTRAIL_TEST_POSTGRES: %w", err)
		}
		u.Path = "/" + db
		return u.String(), nil
	}
	return dsn + " dbname=" + db, nil
}

// redact hides a password in a URL DSN for error messages.
func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	return "the test server"
}
