package judge

// Metadata keys of a judged measurement: what a judgement records for a
// report to draw (internal/report) and a person to read. The judge
// provider (internal/provider/judge) writes them.
const (
	// MetadataReason is the judge's reason, MetadataWarnings its warnings
	// joined by "; ", and MetadataCanaryWindow and MetadataBaselineWindow
	// the two windows compared, as RFC 3339 intervals (start/end).
	MetadataReason         = "reason"
	MetadataWarnings       = "judgeWarnings"
	MetadataCanaryWindow   = "canaryWindow"
	MetadataBaselineWindow = "baselineWindow"

	// On each measurement that compared two samples: the Hodges-Lehmann
	// estimate of the shift canary − baseline, its confidence interval
	// ("lo,hi") at its level, and the p-value.
	MetadataEstimate        = "estimate"
	MetadataInterval        = "confidenceInterval"
	MetadataConfidenceLevel = "confidenceLevel"
	MetadataPValue          = "pValue"
	// And each side's sample, sorted, as at most MaxSampleValues values
	// joined by ",": all of them, or that many evenly spaced order
	// statistics (the least and the greatest among them); with the whole
	// sample's size.
	MetadataCanarySample    = "canarySample"
	MetadataBaselineSample  = "baselineSample"
	MetadataCanarySampleN   = "canarySampleN"
	MetadataBaselineSampleN = "baselineSampleN"

	// On a counts measurement: the count test's e-value at the last look
	// (MetadataEValue), how many looks it took (MetadataLooks), its
	// decision at the last look (MetadataDecision: continue, Failed,
	// Successful or Inconclusive), 1/alpha, the e-value at which it fails
	// (MetadataThreshold), and the rate ratio canary/baseline at the last
	// look with its confidence sequence, to 4 significant digits
	// (MetadataRatio: "estimate,lower,upper", +Inf for an upper bound the
	// counts do not bound yet, NaN for an estimate without events).
	// MetadataTolerance is the rate ratio still fine, and
	// MetadataDirection the way that fails (increase, decrease): what the
	// HTML report draws the ratio against.
	MetadataEValue    = "eValue"
	MetadataLooks     = "looks"
	MetadataDecision  = "decision"
	MetadataThreshold = "threshold"
	MetadataRatio     = "ratio"
	MetadataTolerance = "tolerance"
	MetadataDirection = "direction"
)

// MaxSampleValues is the most values of each side's sample a measurement
// keeps (MetadataCanarySample): enough to draw its distribution, a
// kilobyte or so a side whatever the sample's size.
const MaxSampleValues = 64
