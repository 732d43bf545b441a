package report

import "time"

// SetShadeWait sets how long a report waits for a place to shade in.
func (rd *Renderer) SetShadeWait(d time.Duration) { rd.shadeWait = d }

// SetNow sets the clock of SeriesFreshness.
func (rd *Renderer) SetNow(now func() time.Time) { rd.now = now }
