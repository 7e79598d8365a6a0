// Placeholder until the spotlight and hero module lands (issue 22, shelf helper): no spotlight,
// no hero. The runtime calls installShelf once; see runtime.js for the interface.

export function installShelf({ runtime }) {
  Object.defineProperties(runtime.api, {
    heroVisible: { get: () => false, enumerable: true },
    heroCollapsed: { get: () => false, enumerable: true },
    spotlightVisible: { get: () => false, enumerable: true },
  });
  const none = () => undefined;
  for (const name of ["showHero", "hideHero", "closeHero", "collapseHero", "expandHero", "toggleHeroCollapsed", "showSpotlight", "hideSpotlight", "toggleSpotlight", "manuallyRegisterSpotlightWidget"]) {
    runtime.api[name] = none;
  }
  return { render: () => null };
}
