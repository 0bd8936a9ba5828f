"""The "Error ratio" custom metric of FiftyOne evaluations (FiftyOne 1.3+).

``evaluate_classifications(..., custom_metrics=["@imagenet-x/imagenet-x/error_ratio"])``
on a dataset with factor tags keeps one entry per slice in
``results.custom_metrics``; FiftyOne's Model Evaluation panel shows them as
rows of its summary table.
"""

import fiftyone.operators as foo


class ErrorRatioMetric(foo.EvaluationMetric):
    """Per slice (ImageNet-X factor, ImageNet-D nuisance, ... or tag): the
    error ratio, with its bootstrap interval and image count beside it. Its
    own value is the largest of them."""

    @property
    def config(self):
        return foo.EvaluationMetricConfig(
            name="error_ratio",
            label="Largest error ratio",
            description=("(1 - accuracy on a slice) / (1 - accuracy), per ImageNet-X "
                         "factor or benchmark slice, with its interval"),
            eval_types=["classification"],
            lower_is_better=True,
            unlisted=True,
        )

    def compute(self, samples, results, slicing=None):
        from imagenetx.analysis.evaluation_metric import error_ratio_entries
        from imagenetx.store.evaluation import keep_custom_metrics

        entries = error_ratio_entries(samples, results.config.pred_field,
                                      results.config.gt_field, slicing, uri=self.uri)
        if results.custom_metrics is None:
            results.custom_metrics = {}
        results.custom_metrics.update(entries)
        keep_custom_metrics(results)  # FiftyOne 1.21-1.22 would drop them on load
        return max((e["value"] for e in entries.values()), default=None)
