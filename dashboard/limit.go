package dashboard

import (
	"strings"
	"sync"
	"time"
)

// linkLimit bounds what one key may ask for: at most max in window, per replica. For
// sign-in links the key is the email, whether or not it belongs to a member (so the
// limit says nothing about membership), which keeps a mailbox from being flooded
// through the form; for operator sign-ins it is the client address.
type linkLimit struct {
	max    int
	window time.Duration
	mu     sync.Mutex
	asked  map[string][]time.Time
}

func newLinkLimit(max int, window time.Duration) *linkLimit {
	return &linkLimit{max: max, window: window, asked: map[string][]time.Time{}}
}

// allow records a request for key (case-insensitive) at now and reports whether it is
// within the limit.
func (l *linkLimit) allow(key string, now time.Time) bool {
	key = strings.ToLower(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.asked) > 100_000 { // drop addresses whose window has passed; the map stays bounded
		for k, ts := range l.asked {
			if now.Sub(ts[len(ts)-1]) >= l.window {
				delete(l.asked, k)
			}
		}
	}
	recent := l.asked[key][:0]
	for _, t := range l.asked[key] {
		if now.Sub(t) < l.window {
			recent = append(recent, t)
		}
	}
	if len(recent) >= l.max {
		l.asked[key] = recent
		return false
	}
	l.asked[key] = append(recent, now)
	return true
}
