package netproxy

import "github.com/sbx-sh/sbx/violations"

// Reporter turns the proxy's refusals into violation records.
func Reporter(col *violations.Collector) func(Denial) {
	if col == nil {
		return nil
	}
	return func(d Denial) {
		col.Add(violations.Record{
			Kind:   violations.KindNetwork,
			Source: violations.SourceProxy,
			Host:   d.Host,
			Port:   d.Port,
			Rule:   d.Rule,
			Detail: d.Proto + ": " + d.Reason,
		})
	}
}
