"""Published claims checked against our results: the machinery, `lgjax reproduce`, its report."""
