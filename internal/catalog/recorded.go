package catalog

import (
	"encoding/json"

	"github.com/oncegate/oncegate/internal/plan"
)

// PlanOf decodes a downstream in the catalog's JSON form (as workflow
// inputs recorded before the plan existed carry it) and resolves its plan.
// It is the operation.CatalogPlan of operation.Input.Resolved.
func PlanOf(raw json.RawMessage) (plan.Downstream, error) {
	var d Downstream
	if err := json.Unmarshal(raw, &d); err != nil {
		return plan.Downstream{}, err
	}
	return d.Plan(), nil
}
