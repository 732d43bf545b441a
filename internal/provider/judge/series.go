package judge

import (
	"context"
	"errors"
	"fmt"

	"github.com/canaryd/canaryd/internal/series"
)

// QuerySeries runs the canary's and the baseline's queries over q's range
// (series.Source), one after the other, each keeping q.MaxSeries series:
// the canary's are marked Side "canary", the baseline's "baseline". A
// control's baseline is queried over the range moved back by its offset,
// and its points moved forward by as much, so that they overlay the
// canary's. An error of either side is returned with what the other gave.
func (s *Source) QuerySeries(ctx context.Context, q series.Query) (series.Set, error) {
	var out series.Set
	var errs []error
	for _, side := range []struct {
		name string
		src  any
	}{{"canary", s.o.Canary}, {"baseline", s.o.Baseline}} {
		src, ok := side.src.(series.Source)
		if !ok {
			errs = append(errs, fmt.Errorf("the %s query cannot be run over a range", side.name))
			continue
		}
		sq := q
		if side.name == "baseline" {
			sq.Start, sq.End = q.Start.Add(-s.o.Offset), q.End.Add(-s.o.Offset)
		}
		set, err := src.QuerySeries(ctx, sq)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s query: %w", side.name, err))
			continue
		}
		for _, sr := range set.Series {
			sr.Side = side.name
			if side.name == "baseline" && s.o.Offset != 0 {
				for i := range sr.Points {
					sr.Points[i].T = sr.Points[i].T.Add(s.o.Offset)
				}
			}
			out.Series = append(out.Series, sr)
		}
		out.More += set.More
		out.Step = set.Step
	}
	return out, errors.Join(errs...)
}
