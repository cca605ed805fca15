package data

// Test-only entry points.

// LoadBytes is Load for content already in memory; name stands for the
// file (its extension selects the format unless opt.Format is set) in
// sources and errors.
func LoadBytes(name string, content []byte, opt LoadOptions) (*Dataset, error) {
	return loadBytes(name, opt, content)
}

// DefaultTemplates returns the embedded templates.
func DefaultTemplates() *Templates {
	t, err := ParseTemplates(defaultSearch, defaultAggregate)
	if err != nil {
		panic("data: embedded templates: " + err.Error())
	}
	return t
}

// DefaultAggregateTemplate returns the source of the embedded aggregation
// template.
func DefaultAggregateTemplate() string { return defaultAggregate }
