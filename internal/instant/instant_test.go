package instant

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		in      string
		want    time.Time
		wantErr string
	}{
		{name: "RFC 3339", in: "2026-11-21T09:00:00Z", want: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)},
		{name: "RFC 3339 with an offset", in: "2026-11-21T10:00:00+01:00", want: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)},
		{name: "RFC 3339 with fractions", in: "2026-11-21T09:00:00.5Z", want: time.Date(2026, 11, 21, 9, 0, 0, 5e8, time.UTC)},
		{name: "Unix seconds", in: "1763715600", want: time.Unix(1763715600, 0)},
		{name: "Unix seconds with a fraction", in: "1763715600.25", want: time.Unix(1763715600, 25e7)},
		{name: "white space", in: "  1763715600\n", want: time.Unix(1763715600, 0)},
		{name: "a duration before now", in: "-24h", want: now.Add(-24 * time.Hour)},
		{name: "a compound duration", in: "-1h30m", want: now.Add(-90 * time.Minute)},
		{name: "a duration after now", in: "15m", want: now.Add(15 * time.Minute)},
		{name: "empty", in: " ", wantErr: "required (RFC 3339"},
		{name: "a word", in: "yesterday", wantErr: `"yesterday" is not a time: want RFC 3339`},
		{name: "a date without a time", in: "2026-11-21", wantErr: `"2026-11-21" is not a time`},
		{name: "NaN", in: "NaN", wantErr: `"NaN" is out of range`},
		{name: "infinity", in: "+Inf", wantErr: `"+Inf" is out of range`},
		{name: "beyond the year 2262", in: "1e12", wantErr: `"1e12" is out of range`},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in, now)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("%s: Parse(%q) = %v, %v; want an error starting %q", tt.name, tt.in, got, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("%s: Parse(%q): %v", tt.name, tt.in, err)
		case !got.Equal(tt.want):
			t.Errorf("%s: Parse(%q) = %v, want %v", tt.name, tt.in, got, tt.want)
		}
	}
	if _, err := Parse("", now); !errors.Is(err, ErrEmpty) {
		t.Errorf("Parse(\"\") = %v, want ErrEmpty", err)
	}
}
