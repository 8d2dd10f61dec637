"""Feature catalogs as data (docs/metrics.md#catalog, format in docs/catalog.md): the bundled
ReFormBench and IFEval catalogs + loader."""

from reform_core.catalog.loader import BUNDLED, Catalog, Category, Feature, Param, load_catalog, parse_catalog

__all__ = ["BUNDLED", "Catalog", "Category", "Feature", "Param", "load_catalog", "parse_catalog"]
