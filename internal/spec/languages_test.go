package spec

import (
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/provider/prometheus/promql"
)

// The languages the tests declare fields in: the Prometheus provider's
// and the conditions'.
var (
	PromQL Language = promql.Language{}
	Expr            = condition.Expr
)
