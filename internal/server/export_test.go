package server

import "github.com/canaryd/canaryd/internal/analyses"

// StoreTimeout is analyses.StoreTimeout, for the tests outside the package.
const StoreTimeout = analyses.StoreTimeout
